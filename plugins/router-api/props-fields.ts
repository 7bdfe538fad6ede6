/**
 * What of a llama-server's own `/props` a client is told: what router-mode clients read (the slot's context and
 * settings, the slots, the template, the modalities), not where the file lies (`model_path` names the user's folders)
 * nor the server's own switches (`ui_settings`, `endpoint_*`, `cors_proxy_enabled`).
 */
const SHOWN = [
  'default_generation_settings', 'total_slots', 'modalities', 'chat_template', 'chat_template_caps',
  'bos_token', 'eos_token', 'media_marker', 'build_info', 'is_sleeping',
] as const

export function shownProps (props: Record<string, unknown>, model: string): Record<string, unknown> {
  const shown: Record<string, unknown> = {}
  for (const key of SHOWN) if (Object.hasOwn(props, key)) shown[key] = props[key]
  // Under the name clients ask by, in both of the fields llama-server names its model with.
  return { ...shown, model_alias: model, model_path: model }
}

/**
 * A GET that would load a model, sent by a browser for another site's page (an `<img src>` carries no Origin, so
 * only Fetch Metadata tells): refused, so that no web page can load and evict models on the user's machine.
 * Clients that are not browsers send no Sec-Fetch-Site; the gateway's own page sends `same-origin`.
 */
export function crossSiteBrowserRequest (secFetchSite: string | string[] | undefined): boolean {
  return secFetchSite === 'cross-site' || secFetchSite === 'same-site'
}

import { Type } from 'typebox'

/** GET /api/convert/status: whether SafeTensors conversion can run here, and if not, what to install. */
export const ConverterStatus = Type.Object({
  ready: Type.Boolean(),
  python: Type.Union([Type.String(), Type.Null()]),
  /** True when the compatibility runner (plugins/convert/converter-shim) stands in for missing packages. */
  shim: Type.Boolean(),
  papered: Type.Array(Type.String()),
  llamaCppSrc: Type.Union([Type.String(), Type.Null()]),
  quantize: Type.Union([Type.String(), Type.Null()]),
  problems: Type.Array(Type.String()),
  fix: Type.Union([Type.String(), Type.Null()]),
  /** The start's background install of what is missing (conversion.auto_setup): plugins/convert/converter-preparation.ts. */
  preparation: Type.Object({
    state: Type.Union([Type.Literal('off'), Type.Literal('idle'), Type.Literal('checking'), Type.Literal('not_needed'), Type.Literal('preparing'), Type.Literal('ready'), Type.Literal('failed'), Type.Literal('unavailable')]),
    route: Type.Union([Type.Literal('apt'), Type.Literal('venv'), Type.Null()]),
    detail: Type.Union([Type.String(), Type.Null()]),
    started_at: Type.Union([Type.String(), Type.Null()]),
    finished_at: Type.Union([Type.String(), Type.Null()]),
  }),
})

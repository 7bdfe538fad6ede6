/** The messages a transcription asks a chat model with, before its audio. */
export interface AsrPrompt { system: string, user: string }

/**
 * What llama-server's own `/v1/audio/transcriptions` asks (common_chat_get_asr_prompt in llama.cpp's common/chat.cpp):
 * "Transcribe audio to text", or, for LFM2's template (its tool-list markers tell it), a system "Perform ASR." and
 * the audio alone. A client's `prompt` replaces the user's text; a `language` is named after it.
 */
export function asrPrompt (template: string, prompt: string | undefined, language: string | undefined): AsrPrompt {
  const lfm2 = template.includes('<|tool_list_start|>') && template.includes('<|tool_list_end|>')
  const preset = lfm2 ? { system: 'Perform ASR.', user: '' } : { system: '', user: 'Transcribe audio to text' }
  let user = prompt !== undefined && prompt !== '' ? prompt : preset.user
  if (language !== undefined && language !== '') user += ` (language: ${language})`
  return { system: preset.system, user }
}

import type { RealisticModelOptions } from '../realistic-model.js'

// Apart from index.ts, which realistic-model.ts imports: these formats are options of realistic-model.ts.

/**
 * How the released models of the newer architectures talk, from llama.cpp's own tree: vocabulary, chat
 * template, end-of-turn token, and the tokens the instruct model added that the tree's vocabulary lacks. The
 * steering answers "Done" after the template's generation prompt and then ends the turn (after any other token
 * too), so that a chat completes in two tokens with finish_reason "stop".
 */
export const CHAT_FORMATS = {
  /** Qwen3.5: thinking on by default, the prompt ending in `<think>\n`, so the answer closes it first. */
  qwen35: {
    architecture: 'qwen35',
    vocab: 'qwen35',
    template: 'Qwen3.5-4B',
    eosToken: '<|im_end|>',
    addedTokens: ['<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'],
    // With thinking off the prompt ends in "</think>\n\n".
    steering: { 'Ċ': '</think>', '</think>': 'Done', 'ĊĊ': 'Done', Done: '<|im_end|>', '*': '<|im_end|>' },
  },
  /** LFM2.5 in Qwen2's vocabulary, which has the ChatML tokens its template writes. */
  lfm2: {
    architecture: 'lfm2',
    vocab: 'qwen2',
    template: 'LFM2.5-Instruct',
    eosToken: '<|im_end|>',
    steering: { 'Ċ': 'Done', Done: '<|im_end|>', '*': '<|im_end|>' },
  },
  /**
   * Gemma 3 under Gemma 2's template (the same turns) in Gemma 4's vocabulary, the turn markers written over
   * two of its unused slots.
   */
  gemma3: {
    architecture: 'gemma3',
    vocab: 'gemma-4',
    template: 'google-gemma-2-2b-it',
    eosToken: '<end_of_turn>',
    controlTokens: ['<start_of_turn>', '<end_of_turn>'],
    steering: { '\n': 'Done', Done: '<end_of_turn>', '*': '<end_of_turn>' },
  },
  /**
   * Gemma 4: the prompt ends in `<|turn>model\n` where llama-server turns thinking on (its default), in an empty
   * thought channel where a request turns it off.
   */
  gemma4: {
    architecture: 'gemma4',
    vocab: 'gemma-4',
    template: 'google-gemma-4-31B-it',
    eosToken: '<turn|>',
    steering: { '\n': 'Done', '<channel|>': 'Done', Done: '<turn|>', '*': '<turn|>' },
  },
} satisfies Record<string, ChatFormat>

/**
 * The newer architectures at test size: three recurrent or windowed layers and a global one, windows of 256
 * tokens (shorter than the prompts that show what they cost), trained on 65536 tokens of context.
 */
export const TINY_HYBRID = { nLayer: 4, nCtxTrain: 65_536, slidingWindow: 256 } satisfies Partial<RealisticModelOptions>

/** What a chat format sets of the writer's options. */
export type ChatFormat = Pick<RealisticModelOptions, 'architecture' | 'vocab' | 'template' | 'eosToken' | 'addedTokens' | 'controlTokens' | 'steering'>

import type { RuntimeBuild } from '../../runtimes/types.js'

/** What a llama-server lacking (part of) llamagate's patch set (runtimes/build/patches) costs; none when it has it all. */
export function missingPatchCosts ({ features }: RuntimeBuild): string[] {
  return [
    ...(features.cacheSalt ? [] : ['API keys in different cache groups reuse no prompt at all (no cache_salt)']),
    ...(features.slotCheckpoints ? [] : ['prompt caches of hybrid and sliding-window models (Qwen3.5, Gemma 3/4, ...) do not survive a swap or a restart']),
    ...(features.cachedPromptSaves ? [] : ['only the conversations still in a slot are saved when a model stops']),
    ...(features.loadGate ? [] : ['a swap waits for the next model\'s whole start: none is prepared while the model before it serves (no --load-gate)']),
  ]
}

/** How to get the patch set. */
export const PATCH_FIX = 'let llamagate build its runtime (npm run runtime:build), or apply runtimes/build/patches/*.patch to your llama.cpp checkout'

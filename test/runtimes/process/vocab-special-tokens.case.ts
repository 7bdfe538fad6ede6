import t from 'tap'
import { withBareServer } from '../../helpers/bare-llama-server.js'
import { realisticModel, type FixtureKind } from '../../helpers/realistic-models.js'

// runtimes/build/patches/0007: the loops that find special tokens by their text walk the token map's entries as
// string views, copied in the map's own order. Which token each special gets, the EOG set, the control attributes and
// the log lines must be what the loops found before; these figures are the unpatched build's, on llama.cpp's own
// vocabularies (Qwen2's, Gemma's 262,144 tokens).

/** llama-server's --verbose log of a load of `kind`'s fixture, up to its listening line. */
async function loadLog (kind: FixtureKind): Promise<string> {
  return withBareServer(await realisticModel(kind), ['--verbose'], async ({ log }) => log())
}

const special = (log: string, name: string): string[] => [...log.matchAll(new RegExp(`print_info: ${name} token +=  *(\\d+ '[^']*')`, 'g'))].map((m) => m[1]!)
// The EOG set as the loader lists it after the loops ("printing all EOG tokens").
const eogIds = (log: string): number[] => [...log.matchAll(/load: +- +(\d+) \('/g)].map((m) => Number(m[1]))
// The loops' own lines, in the order they wrote them: the token map's order.
const loopLines = (log: string): string[] => [...log.matchAll(/load: (control token: +\d+ '[^']*' is not marked as EOG|control-looking token: +\d+ '[^']*')/g)].map((m) => m[1]!.replace(/ +/g, ' '))

t.test('a coder vocabulary: every FIM token, and the EOG set', async (t) => {
  const log = await loadLog('coder')
  t.same(special(log, 'FIM PRE'), ["151646 '<|fim_prefix|>'"])
  t.same(special(log, 'FIM SUF'), ["151648 '<|fim_suffix|>'"])
  t.same(special(log, 'FIM MID'), ["151647 '<|fim_middle|>'"])
  t.same(special(log, 'FIM PAD'), ["151649 '<|fim_pad|>'"])
  t.same(special(log, 'FIM REP'), ["151650 '<|repo_name|>'"])
  t.same(special(log, 'FIM SEP'), ["151651 '<|file_sep|>'"])
  t.same(special(log, 'EOT'), ["151645 '<|im_end|>'"])
  t.same(eogIds(log), [128247, 151643, 151645, 151649, 151650, 151651])
  t.same(loopLines(log), [
    "control token: 151647 '<|fim_middle|>' is not marked as EOG",
    "control token: 151646 '<|fim_prefix|>' is not marked as EOG",
    "control-looking token: 128247 '</s>'",
    "control token: 151644 '<|im_start|>' is not marked as EOG",
    "control token: 151648 '<|fim_suffix|>' is not marked as EOG",
  ], 'the warning names the text; the lines come in the map\'s order')
})

t.test('two candidates for EOT: the one met first in the map\'s order, as before', async (t) => {
  // DeepSeek R1's GGUF says EOS <|endoftext|>; both it and <|im_end|> are EOT texts.
  const log = await loadLog('r1')
  t.same(special(log, 'EOS'), ["151643 '<|endoftext|>'"])
  t.same(special(log, 'EOT'), ["151645 '<|im_end|>'"])
  t.same(eogIds(log), [128247, 151643, 151645])
})

t.test('Gemma\'s 262,144 tokens: the EOG set, the overridden types and the map\'s order', async (t) => {
  const log = await loadLog('gemma3')
  t.same(special(log, 'EOT'), ["7 '<end_of_turn>'"])
  t.same(eogIds(log), [1, 7, 50, 106, 212])
  t.same(loopLines(log), [
    "control token: 258884 '<|video|>' is not marked as EOG",
    "control token: 255999 '<|image>' is not marked as EOG",
    "control token: 258882 '<image|>' is not marked as EOG",
    "control token: 258883 '<audio|>' is not marked as EOG",
    "control token: 98 '<|think|>' is not marked as EOG",
    "control token: 6 '<start_of_turn>' is not marked as EOG",
    "control token: 105 '<|turn>' is not marked as EOG",
    "control token: 258880 '<|image|>' is not marked as EOG",
    "control token: 2 '<bos>' is not marked as EOG",
    "control-looking token: 212 '</s>'",
    "control token: 0 '<pad>' is not marked as EOG",
    "control-looking token: 50 '<|tool_response>'",
    "control token: 46 '<|tool>' is not marked as EOG",
    "control token: 47 '<tool|>' is not marked as EOG",
    "control token: 256000 '<|audio>' is not marked as EOG",
    "control token: 3 '<unk>' is not marked as EOG",
    "control token: 258881 '<|audio|>' is not marked as EOG",
    "control token: 4 '<mask>' is not marked as EOG",
  ])
  t.match(log, /load: 0 unused tokens/)
})

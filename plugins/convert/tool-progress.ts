/**
 * Turns a tool's own progress lines into progress events, sent only when the figure changes:
 * - convert_hf_to_gguf.py (tqdm, redrawn with `\r`): `Writing:  45%|####      | 139k/309k [...]` → completed
 *   45 of total 100 (percent: tqdm's byte counts are rounded with k/M/G suffixes);
 * - llama-quantize: `[  3/ 21]  blk.0.attn_k.weight - ...` → completed 3 of total 21 tensors.
 */
export function progressParser (status: string, onProgress?: (p: { status: string, completed: number, total: number }) => void): (line: string) => void {
  let last = ''
  return (line) => {
    if (!onProgress) return
    let completed: number
    let total: number
    const percent = /^\s*Writing:\s+(\d+)%/.exec(line)
    const tensor = /^\s*\[\s*(\d+)\/\s*(\d+)\]/.exec(line)
    if (percent) { completed = Number(percent[1]); total = 100 } else if (tensor) { completed = Number(tensor[1]); total = Number(tensor[2]) } else return
    const key = `${completed}/${total}`
    if (key === last) return
    last = key
    onProgress({ status, completed, total })
  }
}

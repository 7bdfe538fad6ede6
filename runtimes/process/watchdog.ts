/**
 * The watchdog: a program the gateway starts (llama-server, an RPC worker) runs under `sh`, which first forks a
 * watcher and then execs the program (`"$@"`) in its own place (same pid, same process group). The watcher reads the pipe the gateway holds as its stdin; when
 * the gateway dies, even by SIGKILL, the kernel closes that pipe, the watcher reads EOF and takes the group
 * down: SIGTERM, then SIGKILL after 5 s (it ignores SIGTERM itself only from then on, so that stop()'s
 * SIGTERM to the group ends it at once). (llama-server watches its stdin itself only in router-child mode and
 * only once the model is loaded, so it cannot be relied on here.) A background job's stdin is /dev/null in
 * sh, hence fd 3; the watcher writes nowhere, so that it never holds the log pipe open.
 */
export const WATCHDOG = [
  'exec 3<&0 </dev/null',
  '( cat <&3 >/dev/null; trap "" TERM INT HUP; kill -TERM -$$ 2>/dev/null; i=0',
  '  while kill -0 $$ 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done',
  '  kill -KILL -$$ 2>/dev/null ) >/dev/null 2>&1 &',
  'exec 3<&-',
  'exec "$@"',
].join('\n')

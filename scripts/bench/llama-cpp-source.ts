// The source lookup lives with the runtime build (runtimes/build/); the benchmarks import it from here.
export { PINNED, sourceDir, findOrFetchSource, type Say } from '../../runtimes/build/llama-cpp-source.js'

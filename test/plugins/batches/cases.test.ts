import { runCases } from '../../helpers/cases.js'

// The *.case.ts files of this folder, in one process (test/helpers/cases.ts says why).
await runCases(import.meta.url)

import { runCases } from '../helpers/cases.js'

// The *.case.ts files of this folder, in one process (test/helpers/cases.ts says why): each surface judged by its
// official document (test/fixtures/specs).
await runCases(import.meta.url)

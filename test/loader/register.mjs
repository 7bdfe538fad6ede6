// Runs the TypeScript tests and sources under plain Node: `node --import=./test/loader/register.mjs file.ts`
// (what .taprc gives every test process, and what a test's execArgv hands on to a node it spawns).
import { register } from 'node:module'
import { coverChildren } from './child-coverage.mjs'
import { recordCpuTime } from './cpu-time.mjs'

register('./hooks.mjs', import.meta.url)
coverChildren()
recordCpuTime()

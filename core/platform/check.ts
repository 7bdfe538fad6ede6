/** One finding: `ok` ✓, `warn` !, `fail` ✗; `fix` says what to run or change (null when nothing is to do). */
export interface Check {
  name: string
  status: 'ok' | 'warn' | 'fail'
  message: string
  fix: string | null
}

export const ok = (name: string, message: string): Check => ({ name, status: 'ok', message, fix: null })
export const warn = (name: string, message: string, fix: string | null = null): Check => ({ name, status: 'warn', message, fix })
export const fail = (name: string, message: string, fix: string): Check => ({ name, status: 'fail', message, fix })

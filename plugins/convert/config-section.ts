import { Type } from 'typebox'
import { Duration } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** `autoSetup`: install what the converter lacks at start, in the background, where no question needs asking. */
    conversion: { python: string | null, timeoutMs: number, autoSetup: boolean }
  }
}

/** config.yaml's `conversion`: the converter's interpreter, its time limit, and the install at start. */
export const section = configSection({
  plugin: 'convert',
  doc: 'docs/conversion.md',
  keys: {
    conversion: Type.Object({
      python: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null }),
      timeout: Type.Union([Duration], { default: '30m' }),
      auto_setup: Type.Boolean({ default: true, description: 'prepare what conversion lacks at start, in the background, where no question needs asking' }),
    }, { additionalProperties: false, default: {} }),
  },
  resolve: ({ conversion }, { duration }) => ({
    conversion: { python: conversion.python, timeoutMs: duration('conversion.timeout', conversion.timeout), autoSetup: conversion.auto_setup },
  }),
})

import { Type } from 'typebox'

/** GET /api/convert/status: whether SafeTensors conversion can run here, and if not, what to install. */
export const ConverterStatus = Type.Object({
  ready: Type.Boolean(),
  python: Type.Union([Type.String(), Type.Null()]),
  /** True when the compatibility runner (scripts/converter-shim) stands in for missing packages. */
  shim: Type.Boolean(),
  papered: Type.Array(Type.String()),
  llamaCppSrc: Type.Union([Type.String(), Type.Null()]),
  quantize: Type.Union([Type.String(), Type.Null()]),
  problems: Type.Array(Type.String()),
  fix: Type.Union([Type.String(), Type.Null()]),
})

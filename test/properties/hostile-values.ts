import fc from 'fast-check'
import { nested, objectOf, Raw } from './raw-json.js'

// The generators of hostile JSON: strings, numbers, nesting and objects that have broken servers.

export const weighted = <T>(weight: number, arbitrary: fc.Arbitrary<T>): fc.WeightedArbitrary<T> => ({ weight, arbitrary })

/** Strings that have broken servers: number look-alikes, paths, names, control and lone surrogate characters. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  weighted(6, fc.constantFrom(
    '', ' ', '\t\n', 'NaN', 'Infinity', '-Infinity', '-1', '0', '1e400', '0x1f', '1_000', 'null', 'undefined', 'true',
    '[]', '{}', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty',
    '../../../../etc/passwd', '..', '.', '/', '//', 'a/b/c', 'acme/tiny', 'ACME/TINY', 'acme/tiny:f16', 'acme/tiny:../x',
    'acme/missing', 'acme/', '/tiny', 'acme/.tiny', 'acme/-', 'acme/tiny/', 'a'.repeat(97) + '/b',
    '\u0000', '\u0000acme/tiny', '\ud800', '\udfff', '\ud83d', '\u202eevil', '\ufeff', '\u2028\u2029',
    '💥'.repeat(40), 'Ω≈ç√∫˜µ≤', '{{ .Prompt }}', '{% for x in y %}', '<|im_start|>system', '</s>', '[INST]',
    '%00', '%2e%2e%2f', '\\..\\..\\', 'C:\\Windows\\win.ini', '\r\nX-Injected: 1', '<script>alert(1)</script>',
    'data:image/png;base64,AAAA', 'data:;base64,', 'http://127.0.0.1:9/x.png', 'file:///etc/passwd',
    'sha256:' + '0'.repeat(64), 'sha256-' + 'f'.repeat(64), 'sha256:' + 'G'.repeat(64),
    '5m', '-1m', '0s', '1h30m', '99999999999999999999h', '1e3', '-0', '  5m  ', '5M', '1d',
    'json', 'JSON', 'low', 'high', 'text', 'json_schema', 'q4_0', 'Q4_K_M', 'iq2_xxs', 'f16',
    'user', 'assistant', 'system', 'tool', 'developer', 'function',
  )),
  weighted(3, fc.string({ unit: 'binary', maxLength: 24 })),
  weighted(2, fc.string({ unit: 'grapheme', maxLength: 24 })),
  // Lone surrogates and NULs among ordinary characters: text no encoder can write as UTF-8.
  weighted(1, fc.string({ unit: fc.oneof(fc.constantFrom('\ud800', '\udc00', '\u0000', '\uffff'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 12 })),
  weighted(1, fc.integer({ min: 1, max: 70_000 }).map((n) => 'x'.repeat(n))),
  weighted(1, fc.integer({ min: 1, max: 3_000 }).map((n) => '💥\ud800'.repeat(n))),
)

/** Numbers at the edges: of int32, of exact doubles, of the double range, and what JSON.parse makes of 1e400. */
export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  weighted(6, fc.constantFrom<unknown>(
    0, 1, -1, -2, 2, 0.5, -0.5, 1e-320, 2 ** 31 - 1, 2 ** 31, 2 ** 32, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2,
    Number.MAX_SAFE_INTEGER, 1e20, -1e20, 1e308, -1e308, 5e-324, 16, 15, 64, 65, 1024, 1025,
    new Raw('1e400'), new Raw('-1e400'), new Raw('-0'), new Raw('1E+2'), new Raw('0.000000000000000000000000001'),
    new Raw('1' + '0'.repeat(400)), new Raw('123456789012345678901234567890'),
  )),
  weighted(2, fc.integer()),
  weighted(2, fc.double({ noNaN: true, noDefaultInfinity: true })),
)

/** Depths that are shallow, and depths that overflow a recursive walk or JSON.stringify (the stack). */
const depth = fc.oneof(weighted(2, fc.integer({ min: 1, max: 40 })), weighted(3, fc.integer({ min: 1_000, max: 12_000 })))

/**
 * Deep nesting in the forms the routes walk: arrays, objects, message-like `content` chains and Anthropic-like
 * blocks, written as raw text (the test itself could not JSON.stringify them).
 */
export const deepValue: fc.Arbitrary<Raw> = fc.tuple(depth, fc.constantFrom('array', 'object', 'content', 'parts', 'mixed')).map(([n, kind]) => {
  switch (kind) {
    case 'array': return nested(n, '[', ']', '1')
    case 'object': return nested(n, '{"a":', '}', '1')
    case 'content': return nested(n, '[{"content":', '}]', '"x"')
    case 'parts': return nested(n, '[{"type":"text","text":"x","content":', '}]', '[]')
    default: return nested(n, '{"content":[', ']}', '{}')
  }
})

/** Objects with keys that reach for the prototype or shadow its methods. */
export const hostileObject: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    {}, [], [null], [[]], [{}],
    objectOf([['__proto__', { polluted: 'yes' }]]),
    objectOf([['constructor', { prototype: { polluted: 'yes' } }]]),
    objectOf([['prototype', { polluted: 'yes' }]]),
    objectOf([['toString', 1], ['valueOf', 'x'], ['hasOwnProperty', null]]),
    objectOf([['type', 'image_url'], ['image_url', { url: 'http://127.0.0.1:9/a.png' }]]),
    objectOf([['type', 'image'], ['source', { type: 'base64', media_type: 'image/png', data: '!!' }]]),
    objectOf([['type', 'input_image'], ['image_url', null]]),
    objectOf([['content', [{ type: 'image_url', image_url: 'data:image/png;base64,AAAA' }]]]),
  ),
  fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
)

/** Any value a hostile client might put where a field goes. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  weighted(3, hostileString),
  weighted(3, hostileNumber),
  weighted(2, hostileObject),
  weighted(1, fc.constantFrom<unknown>(null, true, false)),
  weighted(1, deepValue),
  weighted(2, fc.jsonValue({ maxDepth: 3 })),
)

/** Keys for fields a route does not know: random ones, and the ones that reach for the prototype. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', '', ' ', 'model ', 'MODEL', '\u0000', '\ud800',
    'n_predict', 'n_probs', 'grammar', 'json_schema', 'cache_prompt', 'id_slot', 'lora', 'logit_bias', 'n_keep', 'samplers'),
  fc.string({ maxLength: 12 }),
)

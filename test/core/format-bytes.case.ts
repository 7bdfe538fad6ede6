import t from 'tap'
import { formatBytes } from '../../core/base/units.js'

t.test('sizes for people: units that tell two numbers apart', async (t) => {
  // The case that was misread: an 11 MB file on a 6 MB disk read "0.01 GiB" twice.
  t.equal(formatBytes(11_000_000), '10.5 MiB')
  t.equal(formatBytes(6_000_000), '5.72 MiB')
  t.equal(formatBytes(0), '0 bytes')
  t.equal(formatBytes(1023), '1023 bytes')
  t.equal(formatBytes(1024), '1.00 KiB')
  t.equal(formatBytes(1023 * 1024), '1023 KiB', 'no exponent notation below the next unit')
  t.equal(formatBytes(4.5 * 2 ** 30), '4.50 GiB')
  t.equal(formatBytes(2 ** 60), '1048576 TiB', 'the largest unit takes any size')
})

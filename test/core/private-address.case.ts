import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { request } from 'undici'
import { isPrivateAddress, isPrivateLiteral, PrivateAddressError, privateAddressErrorOf, publicOnlyAgent } from '../../core/base/private-address.js'

t.test('the address classes, v4, v6 and v4 inside v6', async (t) => {
  const refused = [
    '127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::127.0.0.1',
    '0.0.0.0', '0.1.2.3', '::',
    '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '::ffff:10.0.0.1', '::ffff:192.168.0.1',
    '169.254.169.254', '::ffff:169.254.169.254', 'fe80::1', 'febf::1',
    '100.64.0.1', '100.127.255.255',
    'fd00::1', 'fc00::1',
    '224.0.0.1', '239.255.255.250', '255.255.255.255', 'ff02::1',
    '64:ff9b::7f00:1',
    'not an address', 'localhost', '',
  ]
  const allowed = [
    '93.184.216.34', '8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.0', '172.15.255.255', '172.32.0.0',
    '169.253.255.255', '169.255.0.0', '192.167.255.255', '11.0.0.0', '223.255.255.255',
    '2606:4700::1', '2a00:1450:4001::1', '::ffff:93.184.216.34', '::ffff:5db8:d822', '2001:db8::1',
  ]
  t.same(refused.filter((a) => !isPrivateAddress(a)), [], 'every loopback, private, link-local, CGNAT, unspecified and multicast address is refused')
  t.same(allowed.filter((a) => isPrivateAddress(a)), [], 'public addresses, the neighbours of each private range included, are not')
})

t.test('address literals in URLs, which no DNS lookup sees', async (t) => {
  for (const url of ['http://127.0.0.1/', 'http://[::1]:8080/x', 'http://[::ffff:127.0.0.1]/', 'http://169.254.169.254/latest/meta-data/', 'http://2130706433/', 'http://0x7f.1/', 'http://[fd00::1]/', 'http://100.64.0.1/', 'http://0.0.0.0/']) {
    t.ok(isPrivateLiteral(new URL(url)), `${url} names a private address`)
  }
  for (const url of ['http://93.184.216.34/', 'http://[2606:4700::1]/', 'http://localhost/', 'http://example.com/']) {
    t.notOk(isPrivateLiteral(new URL(url)), `${url} names no private address outright`)
  }
})

t.test('the public-only agent refuses a name for loopback as it connects, and says which address', async (t) => {
  let asked = 0
  const server = createServer((_req, res) => { asked++; res.end('secret') })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const agent = publicOnlyAgent()
  t.teardown(() => agent.close())
  const port = (server.address() as AddressInfo).port
  const err = await request(`http://localhost:${port}/`, { dispatcher: agent }).catch((e: unknown) => e)
  t.ok(err instanceof PrivateAddressError, 'refused with its own error')
  t.match(err, { host: 'localhost', address: /^(127\.0\.0\.1|::1)$/, message: /^localhost resolves to (127\.0\.0\.1|::1), a private address$/ })
  t.equal(privateAddressErrorOf(new TypeError('fetch failed', { cause: err })), err, 'found behind fetch\'s wrapper')
  t.equal(privateAddressErrorOf(new Error('ECONNREFUSED')), null, 'other errors are not mistaken for it')
  t.equal(asked, 0, 'the server was never asked')
  const direct = await request(`http://localhost:${port}/`)
  t.equal(await direct.body.text(), 'secret', 'the same server answers a default agent: the refusal was the check\'s')
})

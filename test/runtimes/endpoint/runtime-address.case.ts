import t from 'tap'
import { addressTarget } from '../../../runtimes/endpoint/runtime-address.js'

// What the pool and the relay connect to, for a local runtime and for an upstream (plugins/upstreams).

t.test('addresses: a local runtime\'s as before, an upstream\'s with https, a port or not, and a path', async (t) => {
  t.same(addressTarget({ baseUrl: 'http://localhost', socketPath: '/tmp/x.sock' }), { origin: 'http://localhost', prefix: '', tls: false, host: 'localhost', port: 80, hostHeader: 'localhost' })
  t.same(addressTarget({ baseUrl: 'http://127.0.0.1:8081', socketPath: null }), { origin: 'http://127.0.0.1:8081', prefix: '', tls: false, host: '127.0.0.1', port: 8081, hostHeader: '127.0.0.1:8081' })
  t.same(addressTarget({ baseUrl: 'https://api.example.com/v1-proxy', socketPath: null }), { origin: 'https://api.example.com', prefix: '/v1-proxy', tls: true, host: 'api.example.com', port: 443, hostHeader: 'api.example.com' })
  t.same(addressTarget({ baseUrl: 'https://[fd00::7]:8443/a/b', socketPath: null }), { origin: 'https://[fd00::7]:8443', prefix: '/a/b', tls: true, host: 'fd00::7', port: 8443, hostHeader: '[fd00::7]:8443' })
})

import t from 'tap'
import { mallocTunables } from '../../../runtimes/process/malloc-tunables.js'

t.test('huge pages asked for where the gateway\'s environment says nothing of them', async (t) => {
  t.equal(mallocTunables(undefined), 'glibc.malloc.hugetlb=1')
  t.equal(mallocTunables(''), 'glibc.malloc.hugetlb=1')
  t.equal(mallocTunables('glibc.malloc.arena_max=2'), 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1', 'added to the admin\'s own')
})

t.test('an admin\'s own hugetlb setting is left as it is, off included', async (t) => {
  t.equal(mallocTunables('glibc.malloc.hugetlb=0'), 'glibc.malloc.hugetlb=0')
  t.equal(mallocTunables('glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2'), 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2')
  t.equal(mallocTunables('glibc.malloc.not_hugetlb=1'), 'glibc.malloc.not_hugetlb=1:glibc.malloc.hugetlb=1', 'a name that only ends alike is not it')
})

import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import t, { type Test } from 'tap'
import { parseAllDocuments } from 'yaml'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../core/server/app.js'
import { allCommands, findCommand } from '../../core/cli/commands/index.js'
import { CONFIG_ENVIRONMENT, loadConfig, type Config } from '../../core/platform/config.js'
import { GATEWAY_NODE_FLAGS } from '../../core/base/node-flags.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { tempDir } from '../helpers/app.js'

// docs/deploy's Dockerfile and Kubernetes manifests, read as a cluster would read them and checked against what
// the server really serves and reads: probe paths, ports, environment variables, the drain's time. They cannot
// drift from the code without this failing.

const DEPLOY = join(PACKAGE_ROOT, 'docs', 'deploy')
const dockerfile = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8')
const manifests = parseAllDocuments(readFileSync(join(DEPLOY, 'kubernetes.yaml'), 'utf8')).map((d) => d.toJS() as any)
const byKind = (kind: string): any => manifests.find((m) => m.kind === kind)
// The replicas (a StatefulSet, for their stable names) and the front that clients reach (a Deployment).
const replicas = byKind('StatefulSet')
const pod = replicas.spec.template
const container = pod.spec.containers[0]
const portNamed = (name: string): number => container.ports.find((p: { name: string }) => p.name === name).containerPort
const front = byKind('Deployment')
const frontPod = front.spec.template
const frontContainer = frontPod.spec.containers[0]
const services = manifests.filter((m) => m.kind === 'Service')
const headless = services.find((s) => s.spec.clusterIP === 'None')
const frontService = services.find((s) => s.spec.clusterIP !== 'None')
/** The config.yaml of the ConfigMap or Secret the container mounts at LLAMAGATE_CONFIG's folder. */
const mountedConfig = (spec: any, c: any): string => {
  const mount = c.volumeMounts.find((m: { mountPath: string }) => c.env.some((e: { name: string, value?: string }) => e.name === 'LLAMAGATE_CONFIG' && e.value === `${m.mountPath}/config.yaml`))
  const volume = spec.volumes.find((v: { name: string }) => v.name === mount.name)
  const source = volume.configMap !== undefined
    ? manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === volume.configMap.name).data
    : manifests.find((m) => m.kind === 'Secret' && m.metadata.name === volume.secret.secretName).stringData
  return source['config.yaml']
}

/**
 * A pod's config.yaml as it loads it: through LLAMAGATE_CONFIG, with its environment (a secret's value read as
 * `secret-key`), on temporary data and models folders.
 */
async function podConfig (t: Parameters<typeof tempDir>[0], of = pod): Promise<Config> {
  const c = of.spec.containers[0]
  const dir = await tempDir(t)
  const file = join(dir, 'config.yaml')
  const yaml = mountedConfig(of.spec, c).replace(/^models_dir: .*$/m, '')
  await writeFile(file, `${yaml}\nmodels_dir: ${join(dir, 'models')}\ndata_dir: ${dir}\n`)
  const env = Object.fromEntries(c.env.map((e: { name: string, value?: string }) => [e.name, e.value ?? 'secret-key']))
  return loadConfig({}, { ...env, LLAMAGATE_CONFIG: file })
}

t.test('Kubernetes replicas: the config loads; ports, probes and the drain agree with the server', async (t) => {
  const config = await podConfig(t)
  t.equal(config.port, portNamed('http'), 'the http port is the one the config listens on')
  t.equal(config.metrics.listen?.port, portNamed('metrics'), 'the metrics port is metrics.listen\'s')
  t.equal(Number(pod.metadata.annotations['prometheus.io/port']), portNamed('metrics'), 'and the scrape annotation names it')
  t.ok(pod.spec.terminationGracePeriodSeconds * 1000 >= config.shutdown.drainTimeoutMs + 10_000,
    `the grace period (${pod.spec.terminationGracePeriodSeconds} s) outlasts the drain (${config.shutdown.drainTimeoutMs / 1000} s) with room to stop the models`)
  t.same(config.auth.apiKeys, ['secret-key'], 'the keys come from the secret, through LLAMAGATE_API_KEYS')
  t.equal(replicas.spec.serviceName, headless.metadata.name, 'the replicas are named through the headless Service')
  t.same(headless.spec.selector, pod.metadata.labels, 'which selects them')
  t.ok(headless.spec.ports.every((p: { targetPort: string }) => container.ports.some((c: { name: string }) => c.name === p.targetPort)), 'the Service targets a named container port')
  t.ok(manifests.some((m) => m.kind === 'PersistentVolumeClaim' && m.metadata.name === pod.spec.volumes.find((v: { name: string }) => v.name === 'models').persistentVolumeClaim.claimName))
  t.equal(container.volumeMounts.find((m: { name: string }) => m.name === 'models').mountPath, '/models', 'the models volume where models_dir says')
  t.match(byKind('ConfigMap').data['config.yaml'], /^models_dir: \/models$/m)

  // The probe paths and the scrape path, asked of the server built from this config (metrics on the main address
  // here: a test does not bind 0.0.0.0:9464).
  const app = await probedApp(t, config, container)
  t.equal((await app.inject({ method: 'GET', url: pod.metadata.annotations['prometheus.io/path'] })).statusCode, 200, 'the scrape path serves metrics')
  t.match((await app.inject({ method: 'GET', url: container.readinessProbe.httpGet.path })).json(), { status: /^(not )?ready$/, reasons: Array }, 'readiness answers with its reasons')
})

t.test('Kubernetes front: one address, each replica an upstream by its stable name, routed by conversation', async (t) => {
  const config = await podConfig(t, frontPod)
  const frontPort = (name: string): number => frontContainer.ports.find((p: { name: string }) => p.name === name).containerPort
  t.equal(config.port, frontPort('http'), 'the front listens on its http port')
  t.equal(config.metrics.listen?.port, frontPort('metrics'))
  t.equal(Number(frontPod.metadata.annotations['prometheus.io/port']), frontPort('metrics'), 'its scrape annotation names its metrics port')
  t.ok(frontPod.spec.terminationGracePeriodSeconds * 1000 >= config.shutdown.drainTimeoutMs + 10_000, 'its grace period outlasts its drain')
  t.same(config.auth.apiKeys, ['secret-key'], 'the clients\' keys come from the secret')
  t.not(frontContainer.env.find((e: { name: string }) => e.name === 'LLAMAGATE_API_KEYS').valueFrom.secretKeyRef.key,
    container.env.find((e: { name: string }) => e.name === 'LLAMAGATE_API_KEYS').valueFrom.secretKeyRef.key, 'the replicas take other keys than the clients\'')
  t.notOk(frontPod.spec.volumes.some((v: { persistentVolumeClaim?: unknown }) => v.persistentVolumeClaim !== undefined), 'the front stores no models')

  const set = replicas.metadata.name
  t.same(config.upstreams.map((u) => u.url), Array.from({ length: replicas.spec.replicas }, (_, i) => `http://${set}-${i}.${headless.metadata.name}:${portNamed('http')}`),
    'one upstream per replica, by its stable name, on its port')
  for (const u of config.upstreams) {
    t.same([u.kind, u.prefix, u.models], ['llamagate', '', []], `${u.name}: a llamagate, every model under its own name`)
    t.ok(u.key !== null && u.key !== '', `${u.name}: reached with a key`)
  }
  t.equal(config.upstreamRouting, 'prefix', 'each conversation to one replica')
  t.same(frontService.spec.selector, frontPod.metadata.labels, 'the clients\' Service selects the front')
  t.notSame(frontService.spec.selector, pod.metadata.labels, 'not the replicas')
  t.ok(frontService.spec.ports.every((p: { targetPort: string }) => frontContainer.ports.some((c: { name: string }) => c.name === p.targetPort)), 'on a named port of the front')

  // Its probe paths, asked of the front built from this config (its upstreams' names resolve nowhere here: not ready
  // is an answer too).
  await probedApp(t, config, frontContainer)
})

t.test('RPC workers: the worker command, ports and the gateway\'s config agree', async (t) => {
  const rpc = parseAllDocuments(readFileSync(join(DEPLOY, 'rpc-workers.yaml'), 'utf8')).map((d) => d.toJS() as any)
  const of = (kind: string): any => rpc.find((m) => m.kind === kind)
  const worker = of('StatefulSet').spec.template.spec.containers[0]
  const command = findCommand(await allCommands(), worker.args[0])
  t.equal(command?.name, 'rpc-worker', 'the pods run llamagate rpc-worker')
  const { values } = parseArgs({ args: worker.args.slice(1), options: command!.options, strict: true })
  const port = Number(values.port)
  t.equal(worker.ports[0].containerPort, port, 'the container port is the one it listens on')
  t.equal(of('Service').spec.ports[0].port, port)
  t.equal(of('NetworkPolicy').spec.ingress[0].ports[0].port, port, 'the policy opens that port')
  t.same(of('NetworkPolicy').spec.ingress[0].from[0].podSelector.matchLabels, pod.metadata.labels, 'to the gateway\'s pods only')
  t.equal(worker.image.split(':')[0], container.image.split(':')[0], 'the same image (the same llama.cpp build) as the gateway')
  const dir = await tempDir(t)
  const file = join(dir, 'config.yaml')
  await writeFile(file, of('ConfigMap').data['config.yaml'].replace('models_dir: /models', `models_dir: ${join(dir, 'models')}\ndata_dir: ${dir}`))
  const config = loadConfig({}, { LLAMAGATE_CONFIG: file })
  const service = of('Service').metadata.name
  const set = of('StatefulSet').metadata.name
  t.same(config.rpc.workers.map((w) => `${w.endpoint.host}:${w.endpoint.port}`), [0, 1].map((i) => `${set}-${i}.${service}:${port}`), 'the workers by their stable names, on their port')
  t.equal(of('StatefulSet').spec.replicas, config.rpc.workers.length, 'one config entry per worker pod')
  t.same([...config.models.values()].map((m) => m.rpc), [config.rpc.workers.map((w) => w.name)], 'the model is split across them')
})

t.test('every environment variable the files set is one the server reads', async (t) => {
  const fromManifest = [...container.env, ...frontContainer.env].map((e: { name: string }) => e.name) as string[]
  const fromDockerfile = [...dockerfile.matchAll(/\b(LLAMAGATE_[A-Z_]+)=/g)].map((m) => m[1]!)
  t.ok(fromDockerfile.length >= 4)
  for (const name of new Set([...fromManifest, ...fromDockerfile])) t.ok(CONFIG_ENVIRONMENT.includes(name), `${name} is read by the server`)
})

t.test('Dockerfile: port, entry point, command and the build script are the real ones', async (t) => {
  const exposed = Number(/^EXPOSE (\d+)$/m.exec(dockerfile)?.[1])
  const envPort = Number(/LLAMAGATE_PORT=(\d+)/.exec(dockerfile)?.[1])
  t.equal(exposed, envPort, 'EXPOSE is the port it listens on')
  t.equal(exposed, portNamed('http'), 'and the pod\'s')
  t.equal(Number(/127\.0\.0\.1:(\d+)\/livez/.exec(dockerfile)?.[1]), exposed, 'the HEALTHCHECK asks /livez on that port')
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!) as string[]
  t.same(entrypoint.slice(1, -1), [...GATEWAY_NODE_FLAGS], 'node runs with the gateway\'s flags (as npm start)')
  t.ok(existsSync(join(PACKAGE_ROOT, entrypoint.at(-1)!)), `${entrypoint.at(-1)} is built`)
  const command = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[]
  t.ok(findCommand(await allCommands(), command[0]!), `"${command[0]}" is a command`)
  t.same(container.args, command, 'the pod runs the same command')
  t.match(dockerfile, /node dist\/scripts\/build\/build-runtime\.js --backend "\$\{BACKEND\}"/)
  t.ok(existsSync(join(PACKAGE_ROOT, 'dist/scripts/build/build-runtime.js')), 'the runtime build script it runs is built')
})

/**
 * The server built from a pod's config (metrics on the main address: a test does not bind 0.0.0.0:9464, nor Ollama's
 * port), asked each
 * probe path of `container` on its http port: 200, or 503 from a readiness that is not there yet.
 */
async function probedApp (t: Test, config: Config, container: { [probe: string]: { httpGet: { path: string, port: string } } }): Promise<FastifyInstance> {
  const app = await buildApp({ ...config, ollamaListen: null, metrics: { ...config.metrics, listen: null }, auth: { ...config.auth, apiKeys: [] } }, { logger: false })
  t.teardown(() => app.close())
  for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
    const { path, port } = container[probe]!.httpGet
    t.equal(port, 'http', `${probe} on the http port`)
    const res = await app.inject({ method: 'GET', url: path })
    t.ok(res.statusCode === 200 || (probe === 'readinessProbe' && res.statusCode === 503), `${probe} ${path}: ${res.statusCode} ${res.body}`)
  }
  return app
}

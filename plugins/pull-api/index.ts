import fp from 'fastify-plugin'
import pull from './pull.js'

export default fp(async (app) => { await app.register(pull) }, { name: 'pull-api', dependencies: ['download', 'lifecycle'] })

// An example plugin in TypeScript, typed by llamagate's published API (`llamagate/plugin`): options with a schema
// (checked before it registers, defaults filled in), a route, a decorator of a built-in plugin, an error every
// surface answers in its own shape. Compile it to JavaScript (tsc) and install the package beside config.yaml:
//
//   plugins:
//     - path: llamagate-plugin-greeting
//       options: { greeting: Welcome }
import { BadRequestError, definePlugin, Type } from 'llamagate/plugin'

export default definePlugin({
  name: 'greeting',
  options: Type.Object({
    greeting: Type.String({ minLength: 1, default: 'Hello' }),
    route: Type.String({ pattern: '^/', default: '/api/greeting' }),
  }, { additionalProperties: false }),
  register (app, options) {
    app.get(options.route, {
      schema: { querystring: Type.Object({ who: Type.Optional(Type.String()) }) },
    }, async (request) => {
      const { who } = request.query as { who?: string }
      if (who === '') throw new BadRequestError('who, when given, must not be empty')
      // app.store is the storage plugin's decorator: typed here as in the gateway.
      return { text: `${options.greeting}, ${who ?? 'world'}`, models: app.store.list().length }
    })
  },
})

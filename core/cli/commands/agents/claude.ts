import type { AgentRecipe } from './recipe.js'

/**
 * Claude Code through Anthropic's variables (docs: code.claude.com/docs/en/llm-gateway), every model tier set, so
 * its side requests stay here too.
 */
export const claude: AgentRecipe = {
  title: 'Claude Code',
  command: 'claude',
  npmPackage: '@anthropic-ai/claude-code',
  env: ({ url, key, model }) => ({
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_AUTH_TOKEN: key,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    // Its preflight and telemetry go to Anthropic's hosts, which a local setup need not reach.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  }),
  // As Ollama's launcher sets them (cmd/launch/claude.go). The attribution line that opens its system prompt differs
  // from one conversation to the next (and, from its native build, one request to the next); the "tokens left"
  // reminder it may send after tool results is a system message late in the conversation. The gateway copes with
  // both (docs/api.md: System messages among the others), but what is never sent costs nothing.
  switches: { CLAUDE_CODE_ATTRIBUTION_HEADER: '0', CLAUDE_CODE_TOTAL_TOKENS_REMINDER: 'off' },
  args: () => [],
}

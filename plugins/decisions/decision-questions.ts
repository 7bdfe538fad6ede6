/** A question of a decision request: true/false (noul), one of several (choice), or a level on a scale (score). */
export type QuestionType = 'noul' | 'choice' | 'score'

/** One option a question offers: its key (a choice's label, a level's index, `true`/`false`) and what it means. */
export interface DecisionOption {
  key: string
  /** As sent: a string, any JSON, or null. */
  description: unknown
}

/** A question as the System One protocol asks it, options in the order they were sent. */
export interface DecisionQuestion {
  id: string
  type: QuestionType
  /** As sent: a non-empty string, object or array. */
  instructions: unknown
  options: DecisionOption[]
}

/** A request's state (any JSON: text, an object, chat messages) and its questions, answered in this order. */
export interface DecisionAsk {
  state: unknown
  questions: DecisionQuestion[]
}

/** How a question was answered: the probability of each of its options, in its options' order. */
export interface QuestionProbabilities {
  question: DecisionQuestion
  probabilities: number[]
}

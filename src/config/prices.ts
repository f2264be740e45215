/**
 * What one API response cost, from its token counts: the price table behind the per-worker ledger.
 *
 * Source: the model catalog baked into Claude Code 2.1.332, the binary shipped with
 * `@anthropic-ai/claude-agent-sdk` 0.3.332 (its `pricing` tiers and the tier each model id uses),
 * read on 2026-12-01. That binary computes the `total_cost_usd` flower records per step from the
 * same figures, so the ledger reconciles with the step's own cost instead of drifting from it; the
 * tiers of the older models agree with Anthropic's published per-million-token prices.
 * Update it when the bundled binary is upgraded (a new model shows up as "unpriced" until then).
 *
 * Invariants:
 * - Prices are USD per million tokens: input, output, cache read, and cache write for the 5-minute
 *   and the 1-hour cache.
 * - A model is priced only when its id is one of the table's ids, optionally followed by a date
 *   (`-20250929`), a provider suffix (`-v1:0`, `@20241022`) or a window tag (`[1m]`), and
 *   optionally preceded by a provider prefix (`us.anthropic.`). Anything else — a new version, a
 *   gateway alias, `<synthetic>` — is unpriced: `priceFor` gives undefined and the cost is null,
 *   never a guess from a neighbouring model.
 * - Pure: no I/O, no clock.
 */

/** USD per million tokens. */
export interface TokenPrices {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  /** Writes to the default (5-minute) prompt cache. */
  readonly cacheWrite: number;
  /** Writes to the 1-hour prompt cache. */
  readonly cacheWrite1h: number;
}

export interface ModelPrices extends TokenPrices {
  /** Web searches, USD each. */
  readonly webSearch: number;
  /** A higher price for requests whose prompt is above a size (some small models). */
  readonly longPrompt?: TokenPrices & { readonly abovePromptTokens: number };
}

const tier = (
  input: number,
  output: number,
  cacheRead: number,
  cacheWrite: number,
  cacheWrite1h: number,
): ModelPrices => ({ input, output, cacheRead, cacheWrite, cacheWrite1h, webSearch: 0.01 });

const TIERS = {
  haiku35: tier(0.8, 4, 0.08, 1, 1.6),
  haiku45: tier(1, 5, 0.1, 1.25, 2),
  haiku55: {
    ...tier(0.1, 0.5, 0.01, 0.125, 0.2),
    longPrompt: {
      abovePromptTokens: 100_000,
      input: 0.5,
      output: 2.5,
      cacheRead: 0.05,
      cacheWrite: 0.625,
      cacheWrite1h: 1,
    },
  },
  t2_10: tier(2, 10, 0.2, 2.5, 4),
  t2_10r010: tier(2, 10, 0.1, 2.5, 4),
  t3_15: tier(3, 15, 0.3, 3.75, 6),
  t4_20r020: tier(4, 20, 0.2, 5, 8),
  t5_25: tier(5, 25, 0.5, 6.25, 10),
  t8_40r020: tier(8, 40, 0.2, 10, 16),
  t10_50: tier(10, 50, 1, 12.5, 20),
  t10_50r025: tier(10, 50, 0.25, 12.5, 20),
  t15_75: tier(15, 75, 1.5, 18.75, 30),
} satisfies Record<string, ModelPrices>;

/**
 * Model id → prices, as the catalog assigns them. `claude-opus-4` and `claude-sonnet-4` are the
 * first-party ids of the 4.0 models (`claude-opus-4-20250514`), which the catalog files as `-4-0`.
 */
export const PRICE_TABLE: Readonly<Record<string, ModelPrices>> = Object.freeze({
  'claude-3-5-haiku': TIERS.haiku35,
  'claude-haiku-4-5': TIERS.haiku45,
  'claude-haiku-5-5': TIERS.haiku55,
  'claude-3-5-sonnet': TIERS.t3_15,
  'claude-3-7-sonnet': TIERS.t3_15,
  'claude-sonnet-4-0': TIERS.t3_15,
  'claude-sonnet-4': TIERS.t3_15,
  'claude-sonnet-4-5': TIERS.t3_15,
  'claude-sonnet-4-6': TIERS.t3_15,
  'claude-sonnet-5': TIERS.t2_10,
  'claude-sonnet-5-5': TIERS.t2_10r010,
  'claude-opus-4-0': TIERS.t15_75,
  'claude-opus-4': TIERS.t15_75,
  'claude-opus-4-1': TIERS.t15_75,
  'claude-opus-4-5': TIERS.t5_25,
  'claude-opus-4-6': TIERS.t5_25,
  'claude-opus-4-7': TIERS.t5_25,
  'claude-opus-4-8': TIERS.t5_25,
  'claude-opus-5': TIERS.t5_25,
  'claude-opus-5-5': TIERS.t4_20r020,
  'claude-fable-5': TIERS.t10_50,
  'claude-fable-5-1': TIERS.t10_50r025,
  'claude-fable-5-2': TIERS.t8_40r020,
  'claude-mythos-5': TIERS.t10_50,
  'claude-mythos-5-1': TIERS.t10_50r025,
  'claude-mythos-5-2': TIERS.t8_40r020,
});

/** What may follow a known id: a release date, a provider version or region tag, a window tag. */
const ID_SUFFIX = /^(?:-\d{8})?(?:-v\d+(?::\d+)?)?(?:@\d{8})?(?:\[[^\]]*\])?$/;
/** What may precede it: a provider's namespace (`us.anthropic.`, `anthropic.`). */
const ID_PREFIX = /^(?:[a-z]{2,4}\.)?(?:anthropic\.)?$/;

/** Lookups already made: a long transcript asks about the same one or two models thousands of times. */
const known = new Map<string, ModelPrices | undefined>();

/** The prices of `model`, or undefined when the table does not know it. */
export function priceFor(model: string | undefined): ModelPrices | undefined {
  if (!model) return undefined;
  if (known.has(model)) return known.get(model);
  const prices = lookUp(model);
  known.set(model, prices);
  return prices;
}

function lookUp(model: string): ModelPrices | undefined {
  const name = model.trim().toLowerCase();
  const start = name.indexOf('claude-');
  if (start < 0 || !ID_PREFIX.test(name.slice(0, start))) return undefined;
  const bare = name.slice(start);
  let best: string | undefined;
  for (const id of Object.keys(PRICE_TABLE)) {
    if (!bare.startsWith(id) || !ID_SUFFIX.test(bare.slice(id.length))) continue;
    if (best === undefined || id.length > best.length) best = id;
  }
  return best === undefined ? undefined : PRICE_TABLE[best];
}

/** The token counts of one response, as the API reports them in `usage`. */
export interface ResponseTokens {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheCreation: number;
  /** The part of `cacheCreation` written to the 1-hour cache. */
  readonly cacheCreation1h?: number;
  readonly webSearches?: number;
  /** Requests served in the US-only inference region cost 10 % more. */
  readonly usOnly?: boolean;
}

const US_ONLY_MARKUP = 1.1;

/** USD for one response on `prices`. */
export function responseCost(tokens: ResponseTokens, prices: ModelPrices): number {
  const prompt = tokens.input + tokens.cacheRead + tokens.cacheCreation;
  const rate = prices.longPrompt && prompt > prices.longPrompt.abovePromptTokens ? prices.longPrompt : prices;
  const oneHour = Math.min(tokens.cacheCreation, Math.max(0, tokens.cacheCreation1h ?? 0));
  const perMillion =
    tokens.input * rate.input +
    tokens.output * rate.output +
    tokens.cacheRead * rate.cacheRead +
    (tokens.cacheCreation - oneHour) * rate.cacheWrite +
    oneHour * rate.cacheWrite1h;
  const usd = perMillion / 1_000_000 + (tokens.webSearches ?? 0) * prices.webSearch;
  return tokens.usOnly ? usd * US_ONLY_MARKUP : usd;
}

/**
 * The embedded engine: a local GGUF model run in process by node-llama-cpp (its prebuilt CPU binary; no server).
 * `sequences` sequences of one context serve requests in parallel; node-llama-cpp batches their evaluations. Where a
 * task declares a JSON schema for its answer (RuMedNER), decoding is constrained to it with node-llama-cpp's grammar.
 *
 * Log-likelihood: the shared prompt is evaluated once, then the candidates are walked as a token trie, each position
 * evaluated once with the full next-token distribution (`controlledEvaluate` with `generateNext.probabilities` and no
 * sampling options), and the candidate's tokens erased again after its subtree.
 * node-llama-cpp is loaded only when this provider is used.
 */

import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { sha256File } from '../data/checksum.js';
import { RumedbenchError } from '../errors.js';
import { withEngines } from '../optional-deps.js';
import type { ProviderInfo } from '../scoring/run-log.js';
import {
  buildTrie,
  type LoglikRequest,
  type LoglikResult,
  moveTrailingWhitespace,
  splitByCount,
  type TrieNode,
} from './loglik.js';
import type { ChatMessage } from './prompt.js';
import type { ChatHints, ChatReply, Provider, SamplingParams } from './provider.js';

type NodeLlamaCpp = typeof import('node-llama-cpp');
type Llama = Awaited<ReturnType<NodeLlamaCpp['getLlama']>>;
type LlamaModel = Awaited<ReturnType<Llama['loadModel']>>;
type LlamaContext = Awaited<ReturnType<LlamaModel['createContext']>>;
type Sequence = ReturnType<LlamaContext['getSequence']>;
type Grammar = Awaited<ReturnType<Llama['createGrammarForJsonSchema']>>;
/** node-llama-cpp brands its token ids; the trie and the splitting work on plain numbers. */
type Token = import('node-llama-cpp').Token;
const asToken = (t: number): Token => t as Token;

export interface LlamaOptions {
  modelPath: string;
  contextSize?: number;
  /** Sequences evaluated in parallel (batched); 1 by default. */
  sequences?: number;
  /** Use a GPU where node-llama-cpp finds one; CPU only by default. */
  gpu?: boolean;
  /** CPU threads; by default the cores this process may use (node-llama-cpp's own default oversubscribes a
   * 2-core container: 125 ms per one-token evaluation of a tiny model instead of 0.5 ms). */
  threads?: number;
}

export class LlamaProvider implements Provider {
  private readonly grammars = new Map<string, Promise<Grammar>>();
  private readonly free: Sequence[];
  private readonly waiting: ((s: Sequence) => void)[] = [];
  /** The log-likelihood request before this one: scoring runs one request at a time (see `loglik`). */
  private scoring: Promise<unknown> = Promise.resolve();
  /** Positions evaluated for log-likelihood requests, in all. */
  evaluatedPositions = 0;

  private constructor(
    private readonly lib: NodeLlamaCpp,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly info: Record<string, unknown>,
    sequences: number,
  ) {
    this.free = Array.from({ length: sequences }, () => context.getSequence());
  }

  static async load(options: LlamaOptions): Promise<LlamaProvider> {
    const lib: NodeLlamaCpp = await withEngines('--provider llama', () => import('node-llama-cpp'));
    const llama = await lib.getLlama({ gpu: options.gpu ? 'auto' : false, build: 'never' });
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath: options.modelPath });
    } catch (e) {
      throw new RumedbenchError(
        'LLM_REQUEST_FAILED',
        `${options.modelPath}: not a loadable GGUF model (${(e as Error).message})`,
        { cause: e },
      );
    }
    const sequences = Math.max(1, options.sequences ?? 1);
    const context = await model.createContext({
      contextSize: options.contextSize ?? 4096,
      sequences,
      threads: options.threads ?? availableParallelism(),
    });
    const info = {
      provider: 'llama',
      model: basename(options.modelPath),
      gguf_file: options.modelPath,
      gguf_sha256: (await sha256File(options.modelPath)).sha256,
      context_size: context.contextSize,
      sequences,
      engine: 'node-llama-cpp',
    };
    return new LlamaProvider(lib, llama, model, context, info, sequences);
  }

  describe(): ProviderInfo {
    return this.info;
  }

  /** A free sequence, waiting for one if all are busy. */
  private acquire(): Promise<Sequence> {
    const s = this.free.pop();
    if (s) return Promise.resolve(s);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private async release(s: Sequence): Promise<void> {
    await s.clearHistory();
    const next = this.waiting.shift();
    if (next) next(s);
    else this.free.push(s);
  }

  private async withSequence<T>(f: (s: Sequence) => Promise<T>): Promise<T> {
    const s = await this.acquire();
    try {
      return await f(s);
    } finally {
      await this.release(s);
    }
  }

  private grammar(schema: object): Promise<Grammar> {
    const key = JSON.stringify(schema);
    let g = this.grammars.get(key);
    if (!g) {
      g = this.llama.createGrammarForJsonSchema(schema as never);
      this.grammars.set(key, g);
    }
    return g;
  }

  chat(messages: readonly ChatMessage[], params: SamplingParams, hints: ChatHints = {}): Promise<ChatReply> {
    return this.withSequence((sequence) => this.chatOn(sequence, messages, params, hints));
  }

  private async chatOn(
    sequence: Sequence,
    messages: readonly ChatMessage[],
    params: SamplingParams,
    hints: ChatHints,
  ): Promise<ChatReply> {
    const session = new this.lib.LlamaChatSession({ contextSequence: sequence });
    try {
      const last = messages[messages.length - 1];
      if (last?.role !== 'user')
        throw new RumedbenchError('LLM_REQUEST_FAILED', "the last message must be the user's");
      session.setChatHistory(
        messages
          .slice(0, -1)
          .map((m) =>
            m.role === 'assistant'
              ? { type: 'model' as const, response: [m.content] }
              : { type: m.role, text: m.content },
          ),
      );
      const grammar = hints.jsonSchema ? await this.grammar(hints.jsonSchema) : undefined;
      const before = sequence.tokenMeter.usedInputTokens;
      const beforeOut = sequence.tokenMeter.usedOutputTokens;
      const text = await session.prompt(last.content, {
        maxTokens: params.maxTokens,
        temperature: params.temperature,
        ...(params.seed !== undefined ? { seed: params.seed } : {}),
        ...(params.stop && params.stop.length > 0 ? { customStopTriggers: params.stop } : {}),
        ...(grammar ? { grammar } : {}),
      });
      return {
        text,
        usage: {
          promptTokens: sequence.tokenMeter.usedInputTokens - before,
          completionTokens: sequence.tokenMeter.usedOutputTokens - beforeOut,
        },
      };
    } finally {
      session.dispose({ disposeSequence: false });
    }
  }

  async contextTokens(): Promise<number | undefined> {
    return this.info.context_size as number;
  }

  async countTokens(text: string): Promise<number> {
    return this.tokenize(text).length;
  }

  /** The tokens of a text, with the BOS token first where the model wants one. */
  tokenize(text: string): number[] {
    const bos = this.model.tokens.bos;
    const body = this.model.tokenize(text, false) as number[];
    return this.model.tokens.shouldPrependBosToken && bos !== null ? [bos, ...body] : body;
  }

  /**
   * Scores every continuation of a context. `trie: false` evaluates each candidate on its own, prompt and all (what
   * the trie saves is measured against it).
   */
  loglik(request: LoglikRequest, options: { trie?: boolean } = {}): Promise<LoglikResult> {
    // One scoring at a time: run side by side in one context, the trie walks' sums came out several nats apart from
    // the same walks run alone (not float noise; seen in a loaded CI run and locally). Scoring is compute-bound, so
    // running it side by side bought nothing (README, "--concurrency" for llama); generation stays parallel.
    const run = this.scoring.then(() =>
      this.withSequence((s) => this.loglikOn(s, request, options.trie ?? true)),
    );
    this.scoring = run.catch(() => {});
    return run;
  }

  private async loglikOn(s: Sequence, request: LoglikRequest, trie: boolean): Promise<LoglikResult> {
    // Candidates nearly always share one context string: tokenize it once, not once per candidate.
    const contextLength = new Map<string, number>();
    const split = request.continuations.map((c) => {
      const [context, continuation] = moveTrailingWhitespace(request.context, c);
      const n = contextLength.get(context) ?? this.tokenize(context).length;
      contextLength.set(context, n);
      return splitByCount(this.tokenize(context + continuation), n);
    });
    const logprobs = new Array<number | null>(split.length).fill(null);
    let positions = 0;
    // Candidates share an evaluated prompt where their context tokens agree (a tokenizer may merge across the
    // boundary differently for one of them).
    const groups = new Map<string, number[]>();
    split.forEach((x, i) => {
      const key = trie ? x.context.join(',') : `${i}`;
      groups.set(key, [...(groups.get(key) ?? []), i]);
    });
    for (const members of groups.values()) {
      const context = (split[members[0] as number] as { context: number[] }).context;
      if (context.length === 0)
        throw new RumedbenchError('LLM_REQUEST_FAILED', 'an empty prompt cannot be scored');
      // Past its context a sequence would shift, erasing the prompt's beginning and scoring what is left, at a point
      // that depends on how the batches fell: refuse instead, saying what would fit.
      const longest = Math.max(
        ...members.map((i) => (split[i] as { continuation: number[] }).continuation.length),
      );
      if (context.length + longest > s.contextSize)
        throw new RumedbenchError(
          'LLM_REQUEST_FAILED',
          `the prompt (${context.length} tokens) and its longest candidate (${longest}) do not fit the context of ${s.contextSize} tokens; raise --context-size`,
        );
      await s.clearHistory();
      const out = await s.controlledEvaluate([
        ...context.slice(0, -1).map(asToken),
        [asToken(context.at(-1) as number), { generateNext: { probabilities: true } }],
      ]);
      positions += context.length;
      const first = out.at(-1)?.next.probabilities as Map<number, number> | undefined;
      if (!first)
        throw new RumedbenchError('LLM_REQUEST_FAILED', 'the engine returned no next-token distribution');
      const roots = buildTrie(members.map((i) => (split[i] as { continuation: number[] }).continuation));
      positions += await this.walk(s, roots, first, 0, (node, total) => {
        for (const e of node.ends) logprobs[members[e] as number] = total;
      });
    }
    this.evaluatedPositions += positions;
    return { logprobs, tokens: split.map((x) => x.continuation.length), positions };
  }

  /**
   * Depth first through the trie: a node's log-probability is read off its parent's distribution. A run of nodes
   * with one child each is evaluated in one call (one batch), with the distribution after each of its tokens.
   */
  private async walk(
    s: Sequence,
    nodes: readonly TrieNode[],
    dist: Map<number, number>,
    sum: number,
    done: (node: TrieNode, total: number) => void,
  ): Promise<number> {
    let evaluated = 0;
    for (const node of nodes) {
      let total = sum + Math.log(dist.get(node.token) ?? 0);
      done(node, total);
      if (node.children.length === 0) continue;
      const chain = [node];
      let last = node;
      while (last.children.length === 1 && (last.children[0] as TrieNode).children.length > 0) {
        last = last.children[0] as TrieNode;
        chain.push(last);
      }
      const out = await s.controlledEvaluate(
        chain.map((n) => [asToken(n.token), { generateNext: { probabilities: true } }]),
      );
      evaluated += chain.length;
      for (let k = 1; k < chain.length; k++) {
        const p = out[k - 1]?.next.probabilities as Map<number, number>;
        total += Math.log(p.get((chain[k] as TrieNode).token) ?? 0);
        done(chain[k] as TrieNode, total);
      }
      evaluated += await this.walk(
        s,
        last.children,
        out.at(-1)?.next.probabilities as Map<number, number>,
        total,
        done,
      );
      await s.eraseContextTokenRanges([{ start: s.nextTokenIndex - chain.length, end: s.nextTokenIndex }]);
    }
    return evaluated;
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.llama.dispose();
  }
}

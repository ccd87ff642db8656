/**
 * The embedded engine: a local GGUF model run in process by node-llama-cpp (its prebuilt CPU binary; no server).
 * One sequence at a time: concurrent requests queue. Where a task declares a JSON schema for its answer (RuMedNER),
 * decoding is constrained to it with node-llama-cpp's grammar, so the reply is always valid JSON.
 * node-llama-cpp is loaded only when this provider is used.
 */
import { basename } from 'node:path';
import { sha256File } from '../data/checksum.js';
import { RumedbenchError } from '../errors.js';
import type { ChatMessage } from './prompt.js';
import type { ChatHints, ChatReply, Provider, SamplingParams } from './provider.js';

type NodeLlamaCpp = typeof import('node-llama-cpp');
type Llama = Awaited<ReturnType<NodeLlamaCpp['getLlama']>>;
type LlamaContext = Awaited<ReturnType<Awaited<ReturnType<Llama['loadModel']>>['createContext']>>;
type Grammar = Awaited<ReturnType<Llama['createGrammarForJsonSchema']>>;

export interface LlamaOptions {
  modelPath: string;
  contextSize?: number;
  /** Use a GPU where node-llama-cpp finds one; CPU only by default. */
  gpu?: boolean;
}

export class LlamaProvider implements Provider {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly grammars = new Map<string, Promise<Grammar>>();

  private constructor(
    private readonly lib: NodeLlamaCpp,
    private readonly llama: Llama,
    private readonly context: LlamaContext,
    private readonly info: Record<string, unknown>,
  ) {}

  static async load(options: LlamaOptions): Promise<LlamaProvider> {
    let lib: NodeLlamaCpp;
    try {
      lib = await import('node-llama-cpp');
    } catch (e) {
      throw new RumedbenchError(
        'LLM_REQUEST_FAILED',
        `node-llama-cpp could not be loaded: ${(e as Error).message}`,
        { cause: e },
      );
    }
    const llama = await lib.getLlama({ gpu: options.gpu ? 'auto' : false, build: 'never' });
    let model: Awaited<ReturnType<Llama['loadModel']>>;
    try {
      model = await llama.loadModel({ modelPath: options.modelPath });
    } catch (e) {
      throw new RumedbenchError(
        'LLM_REQUEST_FAILED',
        `${options.modelPath}: not a loadable GGUF model (${(e as Error).message})`,
        { cause: e },
      );
    }
    const context = await model.createContext({ contextSize: options.contextSize ?? 4096 });
    const info = {
      provider: 'llama',
      model: basename(options.modelPath),
      gguf_file: options.modelPath,
      gguf_sha256: (await sha256File(options.modelPath)).sha256,
      context_size: context.contextSize,
      engine: 'node-llama-cpp',
    };
    return new LlamaProvider(lib, llama, context, info);
  }

  describe(): Record<string, unknown> {
    return this.info;
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
    // One sequence: requests run one after another, whatever the run's concurrency.
    const run = this.queue.then(() => this.chatNow(messages, params, hints));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async chatNow(
    messages: readonly ChatMessage[],
    params: SamplingParams,
    hints: ChatHints,
  ): Promise<ChatReply> {
    const sequence = this.context.getSequence();
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
      session.dispose({ disposeSequence: true });
    }
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.llama.dispose();
  }
}

/** What the harness needs of a model: one chat completion at a time, described for the run manifest. */
import type { ChatMessage } from './prompt.js';

export interface SamplingParams {
  /** 0 by default: the same prompt gives the same answer where the server honours it. */
  temperature: number;
  maxTokens: number;
  seed?: number;
  stop?: string[];
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
}

export interface ChatReply {
  text: string;
  usage?: Usage;
  finishReason?: string;
}

/** Per-request hints a provider may use: a JSON schema the answer must follow (constrained decoding). */
export interface ChatHints {
  jsonSchema?: object;
}

export interface Provider {
  /** For the manifest: provider, endpoint or file, model. */
  describe(): Record<string, unknown>;
  chat(messages: readonly ChatMessage[], params: SamplingParams, hints?: ChatHints): Promise<ChatReply>;
  close?(): Promise<void>;
}

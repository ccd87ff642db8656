/** Types of ./wat.js (run by the build with plain Node, and by vitest's config). */
export declare const WAT_FEATURES: Readonly<Record<string, boolean>>;
export declare function assembleWat(file: string): Promise<Uint8Array>;
export declare function watModuleSource(file: string): Promise<string>;
export declare function watFiles(dir: string): string[];
export declare function watOfModule(path: string): string | undefined;
export declare function watPlugin(): {
  name: string;
  enforce: 'pre';
  resolveId(source: string, importer: string | undefined): string | null;
  load(this: { addWatchFile?(file: string): void }, id: string): Promise<string | null>;
};

/** Types of ./build-stamp.js (a script the build runs with plain Node, before anything is compiled). */
export declare function sourceDigest(root: string): string;
export declare const STAMP: string;
export declare function builtFromCurrentSources(root: string): boolean;

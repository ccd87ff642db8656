/**
 * The task files as published upstream (sb-ai-lab/MedBench, formerly pavel-blinov/RuMedBench), pinned to one
 * commit, with the size and sha256 of each so a download is checked byte for byte.
 */

export const UPSTREAM = {
  repository: 'sb-ai-lab/MedBench',
  commit: 'dd57f4f4f11aebe4fd18011b109d96b6d331a1bf',
  /** Raw-file address of the pinned commit (the full hash: raw addresses may refuse a short one); `--base-url` or
   * RUMEDBENCH_DATA_URL replaces it (mirrors, tests). */
  baseUrl:
    'https://raw.githubusercontent.com/sb-ai-lab/MedBench/dd57f4f4f11aebe4fd18011b109d96b6d331a1bf/data',
} as const;

export interface ManifestEntry {
  /** Relative to the data folder and to the base URL. */
  path: string;
  /** Null where we have never seen the file (it could not be mirrored). */
  size: number | null;
  sha256: string | null;
  /**
   * Git's blob id of the file at the pinned commit: sha1 of `"blob " + size + "\0" + content`, read off upstream's
   * tree. Where the sha256 is unknown, the file is checked against this.
   */
  gitBlob?: string;
}

export const MANIFEST: readonly ManifestEntry[] = [
  {
    path: 'RuMedTop3/train_v1.jsonl',
    size: 1719505,
    sha256: 'b185fe85ad4b4346be3180997fa77816b6e4166567560f2ce948428c51eb6b85',
  },
  {
    path: 'RuMedTop3/dev_v1.jsonl',
    size: 309166,
    sha256: '6b56b2d916a9da92064c749092d2fc4a1677e17b9bb03978f41b213e99c6d286',
  },
  {
    path: 'RuMedTop3/test_v1.jsonl',
    size: 306688,
    sha256: '2be46c07dabe26976b6393f93e6333818665530953e7c22007c6080de3dca507',
  },
  {
    path: 'RuMedSymptomRec/train_v1.jsonl',
    size: 1015156,
    sha256: 'a80ea555304a554590048710e2a0ad505877ad1bc2a1348530a03d48632a16fc',
  },
  {
    path: 'RuMedSymptomRec/dev_v1.jsonl',
    size: 155304,
    sha256: '0b440087aa53e190afdb38098a4c81b6845c226cdffd7110beaea5955d88e582',
  },
  {
    path: 'RuMedSymptomRec/test_v1.jsonl',
    size: 165039,
    sha256: '8ff4e93df488a8453de9e14b21b797dfbda123fbd40b5e4c0d18ab04520bed72',
  },
  {
    path: 'RuMedDaNet/train_v1.jsonl',
    size: 1184847,
    sha256: 'd578427338e53635bcf11f4b0aaaa94f1f6dac6cbfffdc15c1440fce7f859de8',
  },
  {
    path: 'RuMedDaNet/dev_v1.jsonl',
    size: 290100,
    sha256: '546531142765f55856f971fb748d6aa15ac51c52607f61f553fb6e8726cf590c',
  },
  {
    path: 'RuMedDaNet/test_v1.jsonl',
    size: 284065,
    sha256: '995519f1a354978369396870fb23e9ab62f25b60fc3a676bbe78d82edf726443',
  },
  {
    path: 'RuMedDaNet/private_test_v1.jsonl',
    size: 583025,
    sha256: '6346e6de314a24d409ab7bcc1eaecd006155c51cfa13e885045e32e569b018e4',
  },
  // Never mirrored here (over 4 MiB), so no sha256 of ours; upstream's tree at the pinned commit names its blob.
  {
    path: 'RuMedNLI/train_v1.jsonl',
    size: null,
    sha256: null,
    gitBlob: 'a51f146177ca48b573458a6d5554b44d4c5a93bc',
  },
  {
    path: 'RuMedNLI/dev_v1.jsonl',
    size: 538958,
    sha256: '59bc18b273acd05c103ef1f67c734dd7bfb57aad5a6810e215193928ed0252eb',
  },
  {
    path: 'RuMedNLI/test_v1.jsonl',
    size: 523233,
    sha256: '57cef5ecb5b86864d65d1cfda74c3ca5ed35a006de56ad9fbc1fe60e5fcde1d1',
  },
  {
    path: 'RuMedNLI/private_test_v1.jsonl',
    size: 692467,
    sha256: 'fac7f3d3dbe80b5238c8d0cbacd69257766e54d2a28efbbe3f692ecaa4b70004',
  },
  {
    path: 'RuMedNER/train_v1.jsonl',
    size: 1074714,
    sha256: '8e971a3e953a140c4fb89ceb87f194f6bcba69469b15de153509ae0969b3677c',
  },
  {
    path: 'RuMedNER/dev_v1.jsonl',
    size: 217382,
    sha256: '9949b3b4edca4ac162342fe859869d1a8f0720d668f126c06feb623fe8455b93',
  },
  {
    path: 'RuMedNER/test_v1.jsonl',
    size: 218608,
    sha256: '27a22b03dda8bf2321c7c754a0e7ba4ab9c1c7df89c1a8828a221b08012c9763',
  },
  {
    path: 'RuMedTest/private_test_v1.jsonl',
    size: 170727,
    sha256: '8aa36ea4dff9461222f297536065a8c112d8340bf4cdb9b8f7924ab6432e16e9',
  },
];

/** A custom chain: the Beacon API's config/spec and genesis data, the execution chain id and
 *  its blob-parameter-only forks (`TIME:TARGET:MAX:FRACTION,…`). */
export interface CustomNetwork {
  config: Record<string, string>;
  genesis: Record<string, string>;
  chainId: number;
  blobSchedule?: string;
}

export interface VerifierOptions {
  /** 'mainnet' (the default), 'sepolia', 'hoodi', or a custom chain. */
  network?: 'mainnet' | 'sepolia' | 'hoodi' | CustomNetwork;
  /** A trusted finalized beacon block root (0x…), needed unless `state` is given. */
  checkpoint?: string;
  /** A state saved by `saveState()`. */
  state?: Uint8Array;
  /** Fixes the clock (Unix seconds), for replaying recorded proofs. */
  now?: number;
  /** Slots `latest` may be behind the clock (default 3). */
  maxHeadAge?: number;
  /** Sync-committee signers required (default 342 of 512; never below the safety threshold). */
  minParticipation?: number;
  /** Takes eth_getLogs in colibri's form, which cannot show that no block of the range was
   *  left out (off by default: such a proof is refused, check `completeness`). */
  acceptIncompleteLogs?: boolean;
}

/** An Error thrown for a refused proof; `check` names the check that failed. */
export interface VerificationError extends Error {
  check?: string;
}

export interface Verifier {
  /** The verified JSON-RPC result, or throws a VerificationError. */
  verify(method: string, params: unknown[], proof: Uint8Array): unknown;
  saveState(): Uint8Array;
  clientState(): Uint8Array;
  periods(): number[];
  /** Trusts 512 compressed BLS keys as the committee of `period` (only from a trusted source). */
  addCommitteeKeys(period: number, keys: Uint8Array): void;
  /** Knows contract code by its hash, for eth_call proofs that leave it out. */
  addCode(code: Uint8Array): void;
}

export function createVerifier(options: VerifierOptions): Promise<Verifier>;
export function supportedMethods(): Promise<string[]>;

export interface ProviderOptions extends VerifierOptions {
  /** The prover's `POST /proof` URL. */
  prover: string;
  /** Called with the new state when the verifier learned committee keys. */
  onState?: (state: Uint8Array) => void;
  fetch?: typeof fetch;
}

/** An EIP-1193 provider. */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

export function createProvider(options: ProviderOptions): Eip1193Provider;

/**
 * The certificates the in-process client of test/reliability/fail-closed.test.ts trusts besides none: set once the
 * test made them, read by its stand-in for undici's Pool whenever a client is created.
 */
let pems: string[] = [];

export function trust(certificates: string[]): void {
  pems = certificates;
}

export function trusted(): string[] | undefined {
  return pems.length > 0 ? pems : undefined;
}

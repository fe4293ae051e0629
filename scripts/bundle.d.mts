/** Types of scripts/bundle.mjs, for the test that rebuilds the bundle. */
export declare const ROOT: string;
export declare const BUNDLE: string;
export declare const CLI_DIR: string;
export declare function bundleAction(outfile?: string): Promise<void>;

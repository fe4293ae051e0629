/** Ownership of route modules, end to end on SQLite (the suite is test/apply/ownership-suite.ts). */
import { afterAll } from "vitest";
import { closeWorlds, ownershipSuite } from "./ownership-suite.js";

afterAll(closeWorlds);
ownershipSuite();

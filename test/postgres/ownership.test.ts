/** Ownership of route modules, end to end on PostgreSQL (the suite is test/apply/ownership-suite.ts). */
import { afterAll } from "vitest";
import { closeWorlds, ownershipSuite } from "../apply/ownership-suite.js";

afterAll(closeWorlds);
ownershipSuite();

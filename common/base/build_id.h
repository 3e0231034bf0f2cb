#pragma once
/*
 * build_id.h - which build a binary is: "orch-VERSION+COMMIT", COMMIT being
 * `git describe --always --dirty` of the source tree when it was configured
 * ("nogit" outside a git checkout). orchd refuses a worker whose Hello names
 * another build (docs/protocol.md): after an upgrade, workers restart with
 * orchd rather than mix builds.
 */

/* orch_build_id - this binary's build id; static. Thread: any. */
const char *orch_build_id(void);

#pragma once
/* orchctl.h - subcommands of orchctl; each returns the process exit code. */

/* orchctl_inspect - "orchctl inspect [--json] [--tensors] [--context N] [--slots S] FILE.gguf...".
 */
int orchctl_inspect(int argc, char **argv);

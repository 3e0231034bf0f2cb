/*
 * orchctl - the orch admin CLI. Subcommands are one table; status, ps, load,
 * unload and logs talk to orchd's admin socket, attach to a worker's debug
 * stream as well, inspect works on files alone.
 */
#include "base/subcmd.h"
#include "orchctl.h"

static const struct subcmd commands[] = {
        {"status", orchctl_status,
         "status [--json] [--socket PATH]  models, devices, jobs, uptime"},
        {"ps", orchctl_ps, "ps [--json] [--socket PATH]  one line per worker"},
        {"load", orchctl_load,
         "load NAME [PATH] [--device D] [--slots N] [--context N] [--tokenizer gguf|hf-json] [--wait] [--socket PATH]"},
        {"unload", orchctl_unload, "unload NAME [--socket PATH]  drain, then stop its workers"},
#ifdef ORCHCTL_HAVE_ATTACH
        {"attach", orchctl_attach,
         "attach WORKER [--dump | --gdb] [--topic log|step]... [--count N] [--json] [--socket "
         "PATH]  its debug stream"},
#endif
        {"logs", orchctl_logs,
         "logs WORKER [-n N] [-f] [--json] [--socket PATH]  its output lines"},
        {"inspect", orchctl_inspect,
         "inspect [--json] [--tensors] [--context N] [--slots S] FILE.gguf...  describe a model file"},
};

int
main(int argc, char **argv)
{
	return subcmd_main("orchctl", commands, sizeof(commands) / sizeof(commands[0]), argc, argv);
}

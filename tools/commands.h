/* The `daxkit` subcommands, one declaration each; append new ones at the end. Each takes the arguments
 * from its own name on (argv[0] is the subcommand, e.g. "doctor") and returns the process exit status:
 * 0 success, 1 failure, 2 usage error. */
#pragma once

/* daxkit doctor PATH [--json] [--quick]: the medium under PATH and what each mode can promise there. */
int dk_cmd_doctor(int argc, char **argv);

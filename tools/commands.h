/* The `daxkit` subcommands, one declaration each; append new ones at the end. Each takes the arguments
 * from its own name on (argv[0] is the subcommand, e.g. "doctor") and returns the process exit status:
 * 0 success, 1 failure, 2 usage error. */
#pragma once

/* daxkit doctor PATH [--json] [--quick]: the medium under PATH and what each mode can promise there. */
int dk_cmd_doctor(int argc, char **argv);
/* daxkit run [--mode M] [--dir PATH]... [--append P] [--persist auto|flush] [--verbose] [--] CMD [ARGS]. */
int dk_cmd_run(int argc, char **argv);
/* daxkit config [--doc]: the option reference, or the values in effect from the environment. */
int dk_cmd_config(int argc, char **argv);
/* daxkit stats [PID] [--once] [--json]: live counters of daxkit processes. */
int dk_cmd_stats(int argc, char **argv);
/* daxkit recover [--json] DIR...: recovers what dead daxkit processes left in managed directories. */
int dk_cmd_recover(int argc, char **argv);

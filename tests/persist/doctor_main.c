/* dk-doctor: runs `daxkit doctor` without the dispatcher (tools/daxkit.c), so the doctor can be tested
 * on its own. Usage is the doctor's: dk-doctor PATH [--json] [--quick]. */
#include "commands.h"

int main(int argc, char **argv) {
    argv[0] = "doctor";
    return dk_cmd_doctor(argc, argv);
}

/* Description: `daxkit stats PID --json` shows exactly the operations this process did on a managed file,
 * while it runs: 1 open, 7 appends (bytes counted), 3 overwrites, 4 reads, 2 fsyncs, 2 publishes, no
 * pass-through, no errors. The CLI runs through st_stats_cli_json (shim_test.h). argv[1]: managed directory. */
#include "shim_test.h"

static const char *json;

static void expect(const char *name, unsigned long long want) {
    unsigned long long got = st_json_counter(json, name);
    CHECK(got == want, "daxkit stats: %s = %llu, expected %llu (output: %s)", name, got, want, json);
}

int main(int argc, char **argv) {
    const char *dir = st_dir(argc, argv);
    st_require_library();
    st_watchdog(30);
    char path[PATH_MAX];
    st_path(path, sizeof path, dir, "stats");
    int fd = OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
    static uint8_t buf[65536];
    st_fill(buf, 3, 0, sizeof buf);
    unsigned long long app_bytes = 0;
    for (int i = 0; i < 4; i++) st_write_all(fd, buf, 1000), app_bytes += 1000; /* 4 appends */
    OK(fsync(fd));                                                                 /* fsync 1, publish 1 */
    for (int i = 0; i < 3; i++) st_pwrite_all(fd, buf, 512, i * 1000);            /* 3 overwrites */
    for (int i = 0; i < 3; i++) st_write_all(fd, buf, 4096), app_bytes += 4096;    /* 3 appends (offset at end) */
    for (int i = 0; i < 4; i++) CHECK(pread(fd, buf, 100, i * 100) == 100, "pread"); /* 4 reads */
    OK(fdatasync(fd));                                                             /* fsync 2, publish 2 */
    json = st_stats_cli_json();
    printf("daxkit stats: %s", json);
    expect("opens", 1);
    expect("appends", 7);
    expect("append_bytes", app_bytes);
    expect("writes", 3);
    expect("write_bytes", 3 * 512);
    expect("reads", 4);
    expect("read_bytes", 400);
    expect("fsyncs", 2);
    expect("publishes", 2);
    expect("passthrough", 0);
    expect("errors", 0);
    OK(close(fd));
    printf("ok: daxkit stats shows exactly the operations done\n");
    return 0;
}

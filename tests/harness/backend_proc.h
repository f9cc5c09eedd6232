/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run pvrdma-overlayd for a test: fork/exec it on a unique socket in a
 * fresh temp dir, its stderr into a log file there, wait for the socket,
 * stop it with SIGTERM and collect the exit status.
 */
#ifndef BACKEND_PROC_H
#define BACKEND_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* the daemon of the same build directory (meson.build sets it) */
#ifndef BACKEND_DEFAULT_PATH
#define BACKEND_DEFAULT_PATH "build/san/backend/pvrdma-overlayd"
#endif

struct backend_proc {
	pid_t pid;
	char dir[256]; /* temp dir holding socket and log */
	char socket_path[300];
	char log_path[300];
	char binary[512];
	char config_path[300]; /* backend_start_config(): the file written */
	int exit_status;       /* waitpid status once reaped */
	bool reaped;
};

/*
 * Start the back-end: binary from env PVO_BACKEND or the default build
 * path, "--socket <dir>/vm.sock" prepended to @args (NULL-terminated).
 * Waits up to @timeout_ms for the socket to accept connections. Returns
 * 0 or -errno with a message in @err.
 */
int backend_start(struct backend_proc *bp, const char *const *args,
		  int timeout_ms, char *err, size_t errlen);
/*
 * Start the back-end on a config file: "[daemon] socket-dir = <dir>" and
 * @config (tenant and vm sections without socket keys) are written to
 * <dir>/backend.conf, and the back-end runs with "--config" on it plus
 * @args. Waits for the socket of every VM named in @vms (NULL-terminated);
 * backend_vm_socket() gives their paths.
 */
int backend_start_config(struct backend_proc *bp, const char *config,
			 const char *const *vms, const char *const *args,
			 int timeout_ms, char *err, size_t errlen);
/* <dir>/<vm>.sock in a static buffer (two slots). */
const char *backend_vm_socket(const struct backend_proc *bp, const char *vm);
/* true while the process has not exited (reaps it if it has). */
bool backend_running(struct backend_proc *bp);
/*
 * SIGTERM, wait up to @timeout_ms, SIGKILL after that. Returns 0 if it
 * exited with status 0 on its own, -1 otherwise (see describe).
 */
int backend_stop(struct backend_proc *bp, int timeout_ms);
/* "exited with status N" / "killed by signal N" / "still running" */
const char *backend_describe(const struct backend_proc *bp);
/* Print the log's last @lines lines as TAP diagnostics. */
void backend_dump_log(const struct backend_proc *bp, int lines);
/* Whether the log has a sanitizer report (ASan, UBSan, LSan): 1 with its
 * first line in @line, 0 if not, -1 if the log cannot be read. */
int backend_sanitizer_report(const struct backend_proc *bp, char *line,
			     size_t len);
/* Whether a line of the log contains @what, looking again every 100 ms
 * for up to @wait_ms (0: once). */
bool backend_log_has(const struct backend_proc *bp, const char *what,
		     int wait_ms);
/* A connection to the back-end's management socket, or -1. */
int backend_mgmt_connect(const struct backend_proc *bp);
/* Reads @fd to its end (or @len - 1 bytes) into @buf, NUL-terminated;
 * returns the bytes read. */
size_t backend_mgmt_read(int fd, char *buf, size_t len);
/*
 * The first line of the back-end's management "show" answer that starts
 * with @kind (e.g. "daemon"), into @line. false if there is none or the
 * socket does not answer.
 */
bool backend_mgmt_line(const struct backend_proc *bp, const char *kind,
		       char *line, size_t len);
/* The number after @key (e.g. " tx_packets=") in @line, 0 if absent. */
unsigned long long backend_field(const char *line, const char *key);
/* Remove the socket, log and temp dir (keep_log leaves the log). */
void backend_cleanup(struct backend_proc *bp, bool keep_log);

#endif /* BACKEND_PROC_H */

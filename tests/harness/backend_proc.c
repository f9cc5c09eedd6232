// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Start and stop pvrdma-overlayd for back-end tests.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend_proc.h"

#define MAX_ARGS 64

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static const char *tmp_base(void)
{
	const char *t = getenv("TMPDIR");

	/* unix socket paths are limited to 107 bytes: keep the base short */
	if (t && *t && strlen(t) < 64)
		return t;
	return "/tmp";
}

/* Fresh temp dir, binary path and log path; nothing started yet. */
static int prepare(struct backend_proc *bp, char *err, size_t errlen)
{
	const char *env = getenv("PVO_BACKEND");

	memset(bp, 0, sizeof(*bp));
	bp->pid = -1;
	snprintf(bp->binary, sizeof(bp->binary), "%s",
		 env && *env ? env : BACKEND_DEFAULT_PATH);
	if (access(bp->binary, X_OK) < 0) {
		snprintf(err, errlen,
			 "back-end binary %s is missing or not executable "
			 "(%s); build it (make) or point PVO_BACKEND at it",
			 bp->binary, strerror(errno));
		return -ENOENT;
	}
	snprintf(bp->dir, sizeof(bp->dir), "%s/pvo-fe-XXXXXX", tmp_base());
	if (!mkdtemp(bp->dir)) {
		snprintf(err, errlen, "mkdtemp %s: %s", bp->dir,
			 strerror(errno));
		bp->dir[0] = 0;
		return -errno;
	}
	snprintf(bp->socket_path, sizeof(bp->socket_path), "%s/vm.sock",
		 bp->dir);
	snprintf(bp->log_path, sizeof(bp->log_path), "%s/backend.log", bp->dir);
	return 0;
}

static bool is_socket(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* fork/exec @argv with stderr into the log; wait for every @sockets. */
static int spawn(struct backend_proc *bp, const char *const *argv,
		 const char *const *sockets, unsigned int nsockets,
		 int timeout_ms, char *err, size_t errlen)
{
	int waited = 0, logfd, nullfd;
	pid_t parent = getpid();
	unsigned int i;

	logfd =
	    open(bp->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (logfd < 0) {
		snprintf(err, errlen, "creating %s: %s", bp->log_path,
			 strerror(errno));
		return -errno;
	}
	fflush(stdout);
	fflush(stderr);
	bp->pid = fork();
	if (bp->pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(logfd);
		return -errno;
	}
	if (bp->pid == 0) {
		/* never outlive a crashed test */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		nullfd = open("/dev/null", O_RDONLY);
		if (nullfd >= 0)
			dup2(nullfd, STDIN_FILENO);
		dup2(logfd, STDOUT_FILENO);
		dup2(logfd, STDERR_FILENO);
		/* only 0-2: tests count the back-end's fds */
		close_range(3, ~0U, 0);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(logfd);

	for (i = 0; i < nsockets;) {
		if (is_socket(sockets[i])) {
			i++;
			continue;
		}
		if (!backend_running(bp)) {
			snprintf(err, errlen,
				 "back-end %s %s before creating %s; see %s",
				 bp->binary, backend_describe(bp), sockets[i],
				 bp->log_path);
			return -ECHILD;
		}
		if (waited >= timeout_ms) {
			snprintf(
			    err, errlen,
			    "back-end did not create %s within %d ms; see %s",
			    sockets[i], timeout_ms, bp->log_path);
			return -ETIMEDOUT;
		}
		sleep_ms(10);
		waited += 10;
	}
	return 0;
}

int backend_start(struct backend_proc *bp, const char *const *args,
		  int timeout_ms, char *err, size_t errlen)
{
	const char *argv[MAX_ARGS + 4];
	const char *sock[1];
	unsigned int n = 0, i;
	int ret;

	ret = prepare(bp, err, errlen);
	if (ret < 0)
		return ret;
	argv[n++] = bp->binary;
	argv[n++] = "--socket";
	argv[n++] = bp->socket_path;
	for (i = 0; args && args[i] && n < MAX_ARGS + 3; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	sock[0] = bp->socket_path;
	return spawn(bp, argv, sock, 1, timeout_ms, err, errlen);
}

const char *backend_vm_socket(const struct backend_proc *bp, const char *vm)
{
	static char buf[2][300];
	static unsigned int slot;
	char *b = buf[slot++ % 2];

	snprintf(b, sizeof(buf[0]), "%s/%s.sock", bp->dir, vm);
	return b;
}

int backend_start_config(struct backend_proc *bp, const char *config,
			 const char *const *vms, const char *const *args,
			 int timeout_ms, char *err, size_t errlen)
{
	const char *argv[MAX_ARGS + 4];
	char sockets[MAX_ARGS][300];
	const char *sock[MAX_ARGS];
	unsigned int n = 0, i;
	FILE *f;
	int ret;

	ret = prepare(bp, err, errlen);
	if (ret < 0)
		return ret;
	snprintf(bp->config_path, sizeof(bp->config_path), "%s/backend.conf",
		 bp->dir);
	f = fopen(bp->config_path, "w");
	if (!f) {
		snprintf(err, errlen, "creating %s: %s", bp->config_path,
			 strerror(errno));
		return -errno;
	}
	fprintf(f, "[daemon]\nsocket-dir = %s\n\n%s\n", bp->dir, config);
	if (fclose(f) != 0) {
		snprintf(err, errlen, "writing %s: %s", bp->config_path,
			 strerror(errno));
		return -EIO;
	}
	argv[n++] = bp->binary;
	argv[n++] = "--config";
	argv[n++] = bp->config_path;
	for (i = 0; args && args[i] && n < MAX_ARGS + 3; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	for (i = 0; vms && vms[i] && i < MAX_ARGS; i++) {
		snprintf(sockets[i], sizeof(sockets[i]), "%s",
			 backend_vm_socket(bp, vms[i]));
		sock[i] = sockets[i];
	}
	if (i)
		snprintf(bp->socket_path, sizeof(bp->socket_path), "%s",
			 sockets[0]);
	return spawn(bp, argv, sock, i, timeout_ms, err, errlen);
}

bool backend_running(struct backend_proc *bp)
{
	pid_t r;

	if (bp->reaped || bp->pid <= 0)
		return false;
	r = waitpid(bp->pid, &bp->exit_status, WNOHANG);
	if (r == bp->pid) {
		bp->reaped = true;
		return false;
	}
	return true;
}

int backend_stop(struct backend_proc *bp, int timeout_ms)
{
	int waited = 0;

	if (bp->pid <= 0)
		return -1;
	if (!bp->reaped) {
		kill(bp->pid, SIGTERM);
		while (backend_running(bp) && waited < timeout_ms) {
			sleep_ms(10);
			waited += 10;
		}
		if (!bp->reaped) {
			kill(bp->pid, SIGKILL);
			waitpid(bp->pid, &bp->exit_status, 0);
			bp->reaped = true;
			return -1;
		}
	}
	return WIFEXITED(bp->exit_status) && WEXITSTATUS(bp->exit_status) == 0
		   ? 0
		   : -1;
}

const char *backend_describe(const struct backend_proc *bp)
{
	static char buf[64];

	if (!bp->reaped)
		return "is still running";
	if (WIFEXITED(bp->exit_status))
		snprintf(buf, sizeof(buf), "exited with status %d",
			 WEXITSTATUS(bp->exit_status));
	else if (WIFSIGNALED(bp->exit_status))
		snprintf(buf, sizeof(buf), "was killed by signal %d (%s)",
			 WTERMSIG(bp->exit_status),
			 strsignal(WTERMSIG(bp->exit_status)));
	else
		snprintf(buf, sizeof(buf), "ended with wait status 0x%x",
			 bp->exit_status);
	return buf;
}

int backend_sanitizer_report(const struct backend_proc *bp, char *line,
			     size_t len)
{
	FILE *f = fopen(bp->log_path, "r");
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, (int)len, f))
		found = strstr(line, "AddressSanitizer") ||
			strstr(line, "runtime error:") ||
			strstr(line, "LeakSanitizer");
	fclose(f);
	return found;
}

bool backend_log_has(const struct backend_proc *bp, const char *what,
		     int wait_ms)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	for (;;) {
		FILE *f = fopen(bp->log_path, "r");

		while (f && !found && getline(&line, &cap, f) >= 0)
			found = strstr(line, what) != NULL;
		if (f)
			fclose(f);
		if (found || wait_ms <= 0)
			break;
		sleep_ms(100);
		wait_ms -= 100;
	}
	free(line);
	return found;
}

void backend_dump_log(const struct backend_proc *bp, int lines)
{
	char *buf = NULL, *p, *start;
	size_t cap = 0;
	FILE *f;
	int n = 0;
	ssize_t len;

	f = fopen(bp->log_path, "r");
	if (!f)
		return;
	len = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (len <= 0) {
		printf("# back-end log %s is empty\n", bp->log_path);
		free(buf);
		return;
	}
	/* find the start of the last @lines lines */
	start = buf;
	for (p = buf + len - 1; p > buf; p--) {
		if (*p == '\n' && p != buf + len - 1 && ++n == lines) {
			start = p + 1;
			break;
		}
	}
	printf("# --- back-end log (%s), last %d lines ---\n", bp->log_path,
	       lines);
	for (p = strtok(start, "\n"); p; p = strtok(NULL, "\n"))
		printf("#   %s\n", p);
	printf("# --- end of back-end log ---\n");
	free(buf);
}

void backend_cleanup(struct backend_proc *bp, bool keep_log)
{
	struct dirent *de;
	char path[600];
	DIR *d;

	if (!bp->dir[0])
		return;
	/* sockets always go; the log and config stay with keep_log */
	d = opendir(bp->dir);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		bool sock = n > 5 && !strcmp(de->d_name + n - 5, ".sock");

		if (de->d_name[0] == '.' || (keep_log && !sock))
			continue;
		snprintf(path, sizeof(path), "%s/%s", bp->dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	if (!keep_log)
		rmdir(bp->dir);
}

int backend_mgmt_connect(const struct backend_proc *bp)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(bp->dir) + 24 > sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, bp->dir, strlen(bp->dir));
	strcat(sa.sun_path, "/pvrdma-overlayd.mgmt");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

size_t backend_mgmt_read(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t k;

	while (got < len - 1 && (k = read(fd, buf + got, len - 1 - got)) > 0)
		got += k;
	buf[got] = '\0';
	return got;
}

bool backend_mgmt_line(const struct backend_proc *bp, const char *kind,
		       char *line, size_t len)
{
	static char buf[65536];
	char *p, *e;
	int fd = backend_mgmt_connect(bp);

	if (fd < 0)
		return false;
	if (write(fd, "show\n", 5) != 5) {
		close(fd);
		return false;
	}
	backend_mgmt_read(fd, buf, sizeof(buf));
	close(fd);
	for (p = buf; *p; p = e + 1) {
		e = strchr(p, '\n');
		if (!strncmp(p, kind, strlen(kind))) {
			snprintf(line, len, "%.*s",
				 e ? (int)(e - p) : (int)strlen(p), p);
			return true;
		}
		if (!e)
			break;
	}
	return false;
}

unsigned long long backend_field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/*
 * atomic_file.c — atomic files and directories (temporary beside the target,
 * fsync, rename / RENAME_EXCHANGE, fsync the directory), reclaiming the
 * temporaries of dead writers, and the crash-point test hook. Core layer;
 * the contract is in core/atomic_internal.h.
 */
#include "core/atomic_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ test hook -- */

static atomic_long crash_count;
static atomic_int crash_mode = -1; /* -1 unread, 0 off, 1 on */
static long crash_at;
static int crash_trace;

void qv_crash_point(const char *what) {
  int mode = atomic_load_explicit(&crash_mode, memory_order_relaxed);
  if (mode == 0) return;
  if (mode < 0) {
    const char *k = getenv("QUIVER_TEST_KILL_AT"), *t = getenv("QUIVER_TEST_KILL_TRACE");
    crash_at = k ? strtol(k, NULL, 10) : 0;
    crash_trace = t != NULL && t[0] == '1';
    mode = crash_at > 0 || crash_trace;
    atomic_store(&crash_mode, mode);
    if (!mode) return;
  }
  long n = atomic_fetch_add(&crash_count, 1) + 1;
  if (crash_trace) fprintf(stderr, "quiver-crash-point %ld %s\n", n, what);
  if (crash_at > 0 && n == crash_at) raise(SIGKILL);
}

/* ---------------------------------------------------------------- names -- */

/* Start time (clock ticks since boot, /proc/<pid>/stat field 22) of a
 * process; false when it cannot be read. */
static bool proc_start(long pid, unsigned long long *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (p == NULL) return false;
  p++;
  /* fields after the name start at field 3; the start time is field 22 */
  for (int field = 3; field < 22; field++) {
    while (*p == ' ') p++;
    while (*p && *p != ' ') p++;
    if (*p == '\0') return false;
  }
  return sscanf(p, " %llu", out) == 1;
}

/* This process's start time, cached per pid (a forked child reads its own). */
static unsigned long long self_start(void) {
  static atomic_ullong cached; /* 0: not read yet (a real start is > 0) */
  static atomic_long cached_pid;
  long pid = (long)getpid();
  unsigned long long v = atomic_load(&cached);
  if (v == 0 || atomic_load(&cached_pid) != pid) {
    if (!proc_start(pid, &v) || v == 0) v = 1;
    atomic_store(&cached, v);
    atomic_store(&cached_pid, pid);
  }
  return v;
}

static const char *const MARK_TMP = ".tmp-quiver-";
static const char *const MARK_OLD = ".old-quiver-";
#define MARK_LEN 12
#define RAND_LEN 6

bool qv_atomic_parse_name(const char *name, long *pid, unsigned long long *start, bool *old) {
  if (name[0] != '.') return false;
  /* the last marker: the target's own name may contain one */
  const char *m = NULL;
  bool is_old = false;
  for (const char *p = name + 1; (p = strstr(p, ".")) != NULL; p++) {
    if (strncmp(p, MARK_TMP, MARK_LEN) == 0) m = p, is_old = false;
    else if (strncmp(p, MARK_OLD, MARK_LEN) == 0) m = p, is_old = true;
  }
  if (m == NULL || m == name + 1) return false;
  const char *s = m + MARK_LEN;
  char *end = NULL;
  errno = 0;
  long p = strtol(s, &end, 10);
  if (end == s || *end != '-' || p <= 0 || errno != 0) return false;
  s = end + 1;
  unsigned long long st = strtoull(s, &end, 10);
  if (end == s || *end != '-' || errno != 0) return false;
  s = end + 1;
  if (strlen(s) != RAND_LEN) return false;
  for (int i = 0; i < RAND_LEN; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9')))
      return false;
  if (pid) *pid = p;
  if (start) *start = st;
  if (old) *old = is_old;
  return true;
}

bool qv_atomic_writer_gone(long pid, unsigned long long start) {
  if (pid == (long)getpid()) return start != self_start();
  if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return true;
  unsigned long long now = 0;
  /* alive (or not ours to signal): gone only when the pid was reused */
  return proc_start(pid, &now) && now != start;
}

/* "<dir>/.<base><mark><pid>-<start>-" + RAND_LEN placeholders into *out. */
static qv_status temp_template(const char *path, const char *mark, char **out, size_t *rand_at,
                               qv_error *err) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = slash ? slash + 1 : path;
  size_t blen = strlen(base);
  if (blen == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    return qv_error_set(err, QV_EARG, "'%s' names a directory, not a file name", path);
  /* keep the temporary's name within NAME_MAX: shorten the copied base */
  if (blen > 180) blen = 180;
  size_t n = dir_len + 1 + blen + MARK_LEN + 48 + RAND_LEN + 1;
  char *t = malloc(n);
  if (t == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  int k = snprintf(t, n, "%.*s.%.*s%s%ld-%llu-", (int)dir_len, path, (int)blen, base, mark,
                   (long)getpid(), self_start());
  *rand_at = (size_t)k;
  memset(t + k, 'X', RAND_LEN);
  t[k + RAND_LEN] = '\0';
  *out = t;
  return QV_OK;
}

static void fill_random(char *p) {
  static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static atomic_ullong counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long x = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec ^
                         (atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ull) ^
                         ((unsigned long long)getpid() << 40);
  for (int i = 0; i < RAND_LEN; i++) {
    x ^= x >> 31; /* splitmix-style scramble */
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    p[i] = abc[x % (sizeof abc - 1)];
  }
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

bool qv_pread_full(int fd, void *dst, int64_t n, int64_t off) {
  int64_t got = 0;
  while (got < n) {
    ssize_t k = pread(fd, (uint8_t *)dst + got, (size_t)(n - got), off + got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    got += k;
  }
  return true;
}

qv_status qv_fsync_dir(const char *dir, qv_error *err) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return qv_error_set(err, QV_EIO, "cannot open directory '%s': %s", dir, strerror(errno));
  int rc = fsync(fd);
  int e = errno;
  close(fd);
  if (rc != 0)
    return qv_error_set(err, QV_EIO, "fsync of directory '%s' failed: %s", dir, strerror(e));
  qv_crash_point("fsync-dir");
  return QV_OK;
}

/* ---------------------------------------------------------------- files -- */

struct qv_atomic_file {
  int fd;
  char *target;
  char *tmp;
};

static void reclaim_beside(const char *path) {
  char *dir = dir_of(path);
  if (dir != NULL) (void)qv_atomic_reclaim(dir, NULL, NULL);
  free(dir);
}

qv_status qv_atomic_file_open(const char *path, qv_atomic_file **out, qv_error *err) {
  *out = NULL;
  if (path == NULL || path[0] == '\0') return qv_error_set(err, QV_EARG, "empty path");
  size_t rand_at = 0;
  char *tmp = NULL;
  QV_RETURN_NOT_OK(temp_template(path, MARK_TMP, &tmp, &rand_at, err));
  qv_atomic_file *f = calloc(1, sizeof *f);
  char *target = strdup(path);
  if (f == NULL || target == NULL) {
    free(f);
    free(target);
    free(tmp);
    return qv_error_set(err, QV_ENOMEM, "out of memory");
  }
  reclaim_beside(path);
  int fd = -1;
  for (int tries = 0; tries < 100 && fd < 0; tries++) {
    fill_random(tmp + rand_at);
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    qv_status st = qv_error_set(err, QV_EIO, "cannot create a temporary file beside '%s': %s", path,
                                strerror(errno));
    free(f);
    free(target);
    free(tmp);
    return st;
  }
  /* the file it replaces keeps its mode; a new one gets 0666 less umask */
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) (void)fchmod(fd, sb.st_mode & 07777);
  f->fd = fd;
  f->target = target;
  f->tmp = tmp;
  qv_crash_point("create");
  *out = f;
  return QV_OK;
}

int qv_atomic_file_fd(const qv_atomic_file *f) { return f->fd; }
const char *qv_atomic_file_tmp(const qv_atomic_file *f) { return f->tmp; }
const char *qv_atomic_file_target(const qv_atomic_file *f) { return f->target; }

qv_status qv_atomic_file_write(qv_atomic_file *f, const void *data, int64_t n, qv_error *err) {
  const char *p = data;
  while (n > 0) {
    ssize_t k = write(f->fd, p, (size_t)(n > (1 << 30) ? (1 << 30) : n));
    if (k < 0) {
      if (errno == EINTR) continue;
      return qv_error_set(err, QV_EIO, "write to '%s' failed: %s", f->tmp, strerror(errno));
    }
    p += k;
    n -= k;
    qv_crash_point("write");
  }
  return QV_OK;
}

static void file_free(qv_atomic_file *f) {
  free(f->target);
  free(f->tmp);
  free(f);
}

void qv_atomic_file_abort(qv_atomic_file *f) {
  if (f == NULL) return;
  if (f->fd >= 0) close(f->fd);
  unlink(f->tmp);
  file_free(f);
}

qv_status qv_atomic_file_commit(qv_atomic_file *f, qv_error *err) {
  if (f == NULL) return qv_error_set(err, QV_EARG, "no file to commit");
  qv_status st = QV_OK;
  if (fsync(f->fd) != 0)
    st = qv_error_set(err, QV_EIO, "fsync of '%s' failed: %s", f->tmp, strerror(errno));
  if (st == QV_OK) qv_crash_point("fsync");
  int fd = f->fd;
  f->fd = -1;
  if (close(fd) != 0 && st == QV_OK)
    st = qv_error_set(err, QV_EIO, "close of '%s' failed: %s", f->tmp, strerror(errno));
  if (st == QV_OK && rename(f->tmp, f->target) != 0)
    st = qv_error_set(err, QV_EIO, "rename '%s' -> '%s' failed: %s", f->tmp, f->target,
                      strerror(errno));
  if (st != QV_OK) {
    qv_atomic_file_abort(f);
    return st;
  }
  qv_crash_point("rename");
  char *dir = dir_of(f->target);
  st = dir ? qv_fsync_dir(dir, err) : qv_error_set(err, QV_ENOMEM, "out of memory");
  free(dir);
  file_free(f);
  return st;
}

qv_status qv_atomic_write_file(const char *path, const void *data, int64_t n, qv_error *err) {
  qv_atomic_file *f = NULL;
  QV_RETURN_NOT_OK(qv_atomic_file_open(path, &f, err));
  qv_status st = qv_atomic_file_write(f, data, n, err);
  if (st != QV_OK) {
    qv_atomic_file_abort(f);
    return st;
  }
  return qv_atomic_file_commit(f, err);
}

/* ---------------------------------------------------------- remove tree -- */

#define MAX_TREE_DEPTH 64

/* Empty the directory open as `fd` (taken over) named `name` for messages. */
static qv_status empty_dir(int fd, const char *name, int depth, qv_error *err) {
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return qv_error_set(err, QV_EIO, "cannot read directory '%s': %s", name, strerror(errno));
  }
  qv_status st = QV_OK;
  struct dirent *e;
  while (st == QV_OK && (errno = 0, e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat sb;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(sb.st_mode)) {
      if (depth >= MAX_TREE_DEPTH) {
        st = qv_error_set(err, QV_EIO, "'%s': directory tree deeper than %d levels", name,
                          MAX_TREE_DEPTH);
        break;
      }
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        st = qv_error_set(err, QV_EIO, "cannot open '%s/%s': %s", name, e->d_name, strerror(errno));
        break;
      }
      st = empty_dir(sub, e->d_name, depth + 1, err);
      if (st == QV_OK && unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        st = qv_error_set(err, QV_EIO, "cannot remove '%s/%s': %s", name, e->d_name,
                          strerror(errno));
    } else if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
      st = qv_error_set(err, QV_EIO, "cannot remove '%s/%s': %s", name, e->d_name, strerror(errno));
    }
    if (st == QV_OK) qv_crash_point("remove");
  }
  closedir(d);
  return st;
}

qv_status qv_remove_tree(const char *path, qv_error *err) {
  struct stat sb;
  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT) return QV_OK;
    return qv_error_set(err, QV_EIO, "'%s': %s", path, strerror(errno));
  }
  if (!S_ISDIR(sb.st_mode)) {
    if (unlink(path) != 0 && errno != ENOENT)
      return qv_error_set(err, QV_EIO, "cannot remove '%s': %s", path, strerror(errno));
    return QV_OK;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return qv_error_set(err, QV_EIO, "cannot open '%s': %s", path, strerror(errno));
  QV_RETURN_NOT_OK(empty_dir(fd, path, 1, err));
  if (rmdir(path) != 0 && errno != ENOENT)
    return qv_error_set(err, QV_EIO, "cannot remove '%s': %s", path, strerror(errno));
  return QV_OK;
}

/* ---------------------------------------------------------- directories -- */

struct qv_atomic_dir {
  char *target;
  char *tmp;
  char *parent;
};

qv_status qv_atomic_dir_open(const char *path, qv_atomic_dir **out, qv_error *err) {
  *out = NULL;
  if (path == NULL || path[0] == '\0') return qv_error_set(err, QV_EARG, "empty path");
  /* "dir/" names "dir" */
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/') len--;
  char *target = strndup(path, len);
  if (target == NULL) return qv_error_set(err, QV_ENOMEM, "out of memory");
  struct stat sb;
  if (lstat(target, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
    qv_status st = qv_error_set(err, QV_EARG, "'%s' exists and is not a directory%s", target,
                                S_ISLNK(sb.st_mode) ? " (a symbolic link)" : "");
    free(target);
    return st;
  }
  size_t rand_at = 0;
  char *tmp = NULL;
  qv_status st = temp_template(target, MARK_TMP, &tmp, &rand_at, err);
  char *parent = st == QV_OK ? dir_of(target) : NULL;
  qv_atomic_dir *d = st == QV_OK ? calloc(1, sizeof *d) : NULL;
  if (st == QV_OK && (parent == NULL || d == NULL))
    st = qv_error_set(err, QV_ENOMEM, "out of memory");
  if (st == QV_OK) {
    (void)qv_atomic_reclaim(parent, NULL, NULL);
    int rc = -1;
    for (int tries = 0; tries < 100 && rc != 0; tries++) {
      fill_random(tmp + rand_at);
      rc = mkdir(tmp, 0777);
      if (rc != 0 && errno != EEXIST) break;
    }
    if (rc != 0)
      st = qv_error_set(err, QV_EIO, "cannot create a temporary directory beside '%s': %s", target,
                        strerror(errno));
  }
  if (st != QV_OK) {
    free(target);
    free(tmp);
    free(parent);
    free(d);
    return st;
  }
  d->target = target;
  d->tmp = tmp;
  d->parent = parent;
  qv_crash_point("mkdir");
  *out = d;
  return QV_OK;
}

const char *qv_atomic_dir_tmp(const qv_atomic_dir *d) { return d->tmp; }

static void dir_free(qv_atomic_dir *d) {
  free(d->target);
  free(d->tmp);
  free(d->parent);
  free(d);
}

void qv_atomic_dir_abort(qv_atomic_dir *d) {
  if (d == NULL) return;
  (void)qv_remove_tree(d->tmp, NULL);
  dir_free(d);
}

/* fsync every file and directory under the directory open as `fd` (taken
 * over), the directory itself last. */
static qv_status sync_tree(int fd, const char *name, int depth, qv_error *err) {
  DIR *d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return qv_error_set(err, QV_EIO, "cannot read directory '%s': %s", name, strerror(errno));
  }
  qv_status st = QV_OK;
  struct dirent *e;
  while (st == QV_OK && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat sb;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) continue;
    if (S_ISDIR(sb.st_mode) && depth >= MAX_TREE_DEPTH) {
      st = qv_error_set(err, QV_EIO, "'%s': directory tree deeper than %d levels", name,
                        MAX_TREE_DEPTH);
      break;
    }
    int sub = openat(dirfd(d), e->d_name,
                     O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (S_ISDIR(sb.st_mode) ? O_DIRECTORY : 0));
    if (sub < 0) {
      st = qv_error_set(err, QV_EIO, "cannot open '%s/%s': %s", name, e->d_name, strerror(errno));
      break;
    }
    if (S_ISDIR(sb.st_mode)) {
      st = sync_tree(sub, e->d_name, depth + 1, err);
    } else {
      if (fsync(sub) != 0)
        st = qv_error_set(err, QV_EIO, "fsync of '%s/%s' failed: %s", name, e->d_name,
                          strerror(errno));
      close(sub);
    }
  }
  if (st == QV_OK && fsync(dirfd(d)) != 0)
    st = qv_error_set(err, QV_EIO, "fsync of directory '%s' failed: %s", name, strerror(errno));
  closedir(d);
  return st;
}

static bool no_exchange_forced(void) {
  const char *v = getenv("QUIVER_TEST_NO_EXCHANGE");
  return v != NULL && v[0] == '1';
}

qv_status qv_atomic_dir_commit(qv_atomic_dir *d, bool *out_exchanged, qv_error *err) {
  if (out_exchanged) *out_exchanged = false;
  if (d == NULL) return qv_error_set(err, QV_EARG, "no directory to commit");
  int fd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  qv_status st = fd < 0 ? qv_error_set(err, QV_EIO, "cannot open '%s': %s", d->tmp, strerror(errno))
                        : sync_tree(fd, d->tmp, 1, err);
  if (st != QV_OK) {
    qv_atomic_dir_abort(d);
    return st;
  }
  qv_crash_point("fsync-tree");
  struct stat sb;
  bool exists = lstat(d->target, &sb) == 0;
  if (exists && !S_ISDIR(sb.st_mode)) {
    st = qv_error_set(err, QV_EARG, "'%s' exists and is not a directory", d->target);
    qv_atomic_dir_abort(d);
    return st;
  }
  char *old = NULL; /* where the old tree is once the new one is in place */
  if (!exists) {
    if (rename(d->tmp, d->target) != 0) {
      st = qv_error_set(err, QV_EIO, "rename '%s' -> '%s' failed: %s", d->tmp, d->target,
                        strerror(errno));
      qv_atomic_dir_abort(d);
      return st;
    }
  } else {
    int rc = -1, e = EINVAL;
    if (!no_exchange_forced()) {
      rc = renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->target, RENAME_EXCHANGE);
      e = errno;
    }
    if (rc == 0) {
      old = d->tmp; /* the old tree now has the temporary's name */
      d->tmp = NULL;
    } else if (e == EINVAL || e == ENOSYS || e == ENOTSUP || e == EOPNOTSUPP) {
      /* Fallback: old tree aside, new tree in, old tree removed. */
      size_t rand_at = 0;
      st = temp_template(d->target, MARK_OLD, &old, &rand_at, err);
      int r2 = -1;
      for (int tries = 0; st == QV_OK && tries < 100 && r2 != 0; tries++) {
        fill_random(old + rand_at);
        struct stat osb;
        if (lstat(old, &osb) == 0) continue;
        r2 = rename(d->target, old);
        if (r2 != 0) {
          st = qv_error_set(err, QV_EIO, "rename '%s' -> '%s' failed: %s", d->target, old,
                            strerror(errno));
        }
      }
      if (st == QV_OK && r2 != 0)
        st = qv_error_set(err, QV_EIO, "cannot move '%s' aside", d->target);
      if (st == QV_OK) {
        qv_crash_point("move-aside");
        if (rename(d->tmp, d->target) != 0) {
          st = qv_error_set(err, QV_EIO, "rename '%s' -> '%s' failed: %s", d->tmp, d->target,
                            strerror(errno));
          (void)rename(old, d->target); /* put the old tree back */
        }
      }
      if (st != QV_OK) {
        free(old);
        qv_atomic_dir_abort(d);
        return st;
      }
    } else {
      st = qv_error_set(err, QV_EIO, "exchanging '%s' and '%s' failed: %s", d->tmp, d->target,
                        strerror(e));
      qv_atomic_dir_abort(d);
      return st;
    }
    if (out_exchanged) *out_exchanged = true;
  }
  qv_crash_point("rename-dir");
  st = qv_fsync_dir(d->parent, err);
  if (old != NULL) {
    /* The new tree is in place: a failure to remove the old one is not the
     * write's failure; what is left carries this process's pid and is
     * reclaimed by a later writer in this directory. */
    (void)qv_remove_tree(old, NULL);
    free(old);
  }
  dir_free(d);
  return st;
}

/* -------------------------------------------------------------- reclaim -- */

qv_status qv_atomic_reclaim(const char *dir, int64_t *out_removed, qv_error *err) {
  if (out_removed) *out_removed = 0;
  DIR *d = opendir(dir);
  if (d == NULL)
    return qv_error_set(err, QV_EIO, "cannot read directory '%s': %s", dir, strerror(errno));
  qv_status st = QV_OK;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid = 0;
    unsigned long long start = 0;
    bool old = false;
    if (!qv_atomic_parse_name(e->d_name, &pid, &start, &old)) continue;
    if (!qv_atomic_writer_gone(pid, start)) continue;
    char full[PATH_MAX];
    if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= sizeof full) continue;
    qv_status rs = QV_OK;
    if (old) {
      /* ".<name>.old-quiver-...": restore it when <name> is missing */
      const char *mark = strstr(e->d_name + 1, MARK_OLD);
      const char *last = mark;
      while (mark != NULL) {
        last = mark;
        mark = strstr(mark + 1, MARK_OLD);
      }
      char target[PATH_MAX];
      struct stat sb;
      /* (names shortened to 180 bytes for the temporary cannot be restored) */
      if (last != NULL && last - e->d_name - 1 < 180 &&
          (size_t)snprintf(target, sizeof target, "%s/%.*s", dir, (int)(last - e->d_name - 1),
                           e->d_name + 1) < sizeof target &&
          lstat(target, &sb) != 0 && errno == ENOENT) {
        if (rename(full, target) == 0) {
          if (out_removed) (*out_removed)++;
          continue;
        }
      }
    }
    rs = qv_remove_tree(full, err);
    if (rs == QV_OK && out_removed) (*out_removed)++;
    if (rs != QV_OK && st == QV_OK) st = rs;
  }
  closedir(d);
  return st;
}

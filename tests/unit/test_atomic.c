/*
 * test_atomic.c — the core atomic file / directory helpers
 * (core/atomic_internal.h): commit and abort of files, temporary names
 * (pid + start time), exchange of directories with and without
 * RENAME_EXCHANGE, removal of trees without following links, and
 * reclaiming temporaries of dead writers while keeping live ones.
 * Oracles: the file system itself (stat, readdir, file contents) and
 * /proc for the writer's identity.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/atomic_internal.h"
#include "qv_test.h"

static char g_dir[256];

static void in_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static int count_entries(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, needle)) n++;
  if (d) closedir(d);
  return n;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static int slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
  return (int)n;
}

static bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

/* Start time of this process as /proc gives it (field 22). */
static unsigned long long my_start(void) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')') + 2;
  for (int field = 3; field < 22; field++) p = strchr(p, ' ') + 1;
  return strtoull(p, NULL, 10);
}

/* A pid that has exited (and was reaped). */
static pid_t dead_pid(void) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, NULL, 0);
  return p;
}

static void test_file_commit(void) {
  char path[512], buf[64];
  in_dir(path, sizeof path, "a.txt");
  qv_error e;
  qv_atomic_file *f = NULL;
  QV_REQUIRE(qv_atomic_file_open(path, &f, &e) == QV_OK);
  const char *tmp = qv_atomic_file_tmp(f);
  const char *base = strrchr(tmp, '/') + 1;
  long pid = 0;
  unsigned long long start = 0;
  bool old = true;
  QV_CHECK(qv_atomic_parse_name(base, &pid, &start, &old));
  QV_CHECK_EQ_INT(pid, getpid());
  QV_CHECK_EQ_INT(start, my_start());
  QV_CHECK(!old);
  QV_CHECK(strncmp(base, ".a.txt.tmp-quiver-", 18) == 0);
  QV_CHECK(!exists(path)); /* nothing at the target before the commit */
  QV_REQUIRE(qv_atomic_file_write(f, "hello", 5, &e) == QV_OK);
  QV_REQUIRE(qv_atomic_file_commit(f, &e) == QV_OK);
  QV_CHECK_EQ_INT(slurp(path, buf, sizeof buf), 5);
  QV_CHECK_EQ_STR(buf, "hello");
  QV_CHECK_EQ_INT(count_entries(g_dir, "tmp-quiver"), 0);
  /* replacing keeps the mode of the file it replaces */
  chmod(path, 0640);
  QV_REQUIRE(qv_atomic_write_file(path, "bye", 3, &e) == QV_OK);
  struct stat sb;
  QV_REQUIRE(stat(path, &sb) == 0);
  QV_CHECK_EQ_INT(sb.st_mode & 0777, 0640);
  slurp(path, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf, "bye");
  /* abort leaves the target as it was and no temporary */
  QV_REQUIRE(qv_atomic_file_open(path, &f, &e) == QV_OK);
  QV_REQUIRE(qv_atomic_file_write(f, "partial", 7, &e) == QV_OK);
  qv_atomic_file_abort(f);
  slurp(path, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf, "bye");
  QV_CHECK_EQ_INT(count_entries(g_dir, "tmp-quiver"), 0);
  /* errors are values */
  QV_CHECK(qv_atomic_file_open("", &f, &e) == QV_EARG);
  QV_CHECK(qv_atomic_file_open("/nonexistent-dir-qv/x", &f, &e) == QV_EIO);
  QV_CHECK(strstr(e.message, "/nonexistent-dir-qv/x") != NULL);
  unlink(path);
}

static void test_parse_name(void) {
  long pid = 0;
  unsigned long long start = 0;
  bool old = false;
  QV_CHECK(qv_atomic_parse_name(".x.arrow.tmp-quiver-12-345-aB3dE9", &pid, &start, &old));
  QV_CHECK_EQ_INT(pid, 12);
  QV_CHECK_EQ_INT(start, 345);
  QV_CHECK(!old);
  QV_CHECK(qv_atomic_parse_name(".d.old-quiver-7-8-abcdef", &pid, &start, &old));
  QV_CHECK(old);
  /* the last marker counts: a target name may contain one */
  QV_CHECK(
      qv_atomic_parse_name(".a.tmp-quiver-1-2-abcdef.tmp-quiver-9-9-zzzzzz", &pid, NULL, NULL));
  QV_CHECK_EQ_INT(pid, 9);
  QV_CHECK(!qv_atomic_parse_name("x.tmp-quiver-12-345-aB3dE9", NULL, NULL, NULL)); /* not hidden */
  QV_CHECK(!qv_atomic_parse_name(".x.tmp-quiver-XXXXXX", NULL, NULL, NULL));       /* old shape */
  QV_CHECK(!qv_atomic_parse_name(".x.tmp-quiver-12-345-abc", NULL, NULL, NULL));
  QV_CHECK(!qv_atomic_parse_name(".x.tmp-quiver-12-345-abcdef.arrow", NULL, NULL, NULL));
  QV_CHECK(!qv_atomic_parse_name(".x.tmp-quiver--1-345-abcdef", NULL, NULL, NULL));
  QV_CHECK(!qv_atomic_parse_name("..tmp-quiver-1-2-abcdef", NULL, NULL, NULL)); /* no name */
}

static void test_writer_gone(void) {
  unsigned long long me = my_start();
  QV_CHECK(!qv_atomic_writer_gone(getpid(), me));
  QV_CHECK(qv_atomic_writer_gone(getpid(), me + 1)); /* pid reused */
  QV_CHECK(qv_atomic_writer_gone(dead_pid(), 1));
  /* a live process not ours to signal is alive: pid 1 with its start */
  FILE *f = fopen("/proc/1/stat", "r");
  if (f != NULL) {
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')') + 2;
    for (int field = 3; field < 22; field++) p = strchr(p, ' ') + 1;
    QV_CHECK(!qv_atomic_writer_gone(1, strtoull(p, NULL, 10)));
  }
}

static void test_reclaim(void) {
  char sub[512], p[768];
  in_dir(sub, sizeof sub, "reclaim");
  QV_REQUIRE(mkdir(sub, 0777) == 0);
  unsigned long long me = my_start();
  pid_t gone = dead_pid();
  /* dead writer: a file and a tree */
  snprintf(p, sizeof p, "%s/.c.arrow.tmp-quiver-%d-%llu-aaaaaa", sub, (int)gone, me);
  put(p, "x");
  snprintf(p, sizeof p, "%s/.ds.tmp-quiver-%d-%llu-bbbbbb", sub, (int)gone, me);
  QV_REQUIRE(mkdir(p, 0777) == 0);
  snprintf(p, sizeof p, "%s/.ds.tmp-quiver-%d-%llu-bbbbbb/inner", sub, (int)gone, me);
  QV_REQUIRE(mkdir(p, 0777) == 0);
  snprintf(p, sizeof p, "%s/.ds.tmp-quiver-%d-%llu-bbbbbb/inner/f", sub, (int)gone, me);
  put(p, "x");
  /* this process with another start time: the pid was reused */
  snprintf(p, sizeof p, "%s/.r.tmp-quiver-%d-%llu-cccccc", sub, (int)getpid(), me + 7);
  put(p, "x");
  /* live writer (this process): kept */
  snprintf(p, sizeof p, "%s/.live.tmp-quiver-%d-%llu-dddddd", sub, (int)getpid(), me);
  put(p, "x");
  /* not a quiver temporary: kept */
  snprintf(p, sizeof p, "%s/.other.tmp-quiver-XXXXXX", sub);
  put(p, "x");
  snprintf(p, sizeof p, "%s/data.arrow", sub);
  put(p, "x");
  /* a dead fallback's old tree whose target is missing: renamed back */
  snprintf(p, sizeof p, "%s/.back.old-quiver-%d-%llu-eeeeee", sub, (int)gone, me);
  QV_REQUIRE(mkdir(p, 0777) == 0);
  snprintf(p, sizeof p, "%s/.back.old-quiver-%d-%llu-eeeeee/state.json", sub, (int)gone, me);
  put(p, "{}");
  /* ... and one whose target exists: removed */
  snprintf(p, sizeof p, "%s/here", sub);
  QV_REQUIRE(mkdir(p, 0777) == 0);
  snprintf(p, sizeof p, "%s/.here.old-quiver-%d-%llu-ffffff", sub, (int)gone, me);
  QV_REQUIRE(mkdir(p, 0777) == 0);
  qv_error e;
  int64_t removed = 0;
  QV_REQUIRE(qv_atomic_reclaim(sub, &removed, &e) == QV_OK);
  QV_CHECK_EQ_INT(removed, 5);
  QV_CHECK_EQ_INT(count_entries(sub, "-aaaaaa"), 0);
  QV_CHECK_EQ_INT(count_entries(sub, "-bbbbbb"), 0);
  QV_CHECK_EQ_INT(count_entries(sub, "-cccccc"), 0);
  QV_CHECK_EQ_INT(count_entries(sub, "-dddddd"), 1);
  QV_CHECK_EQ_INT(count_entries(sub, "XXXXXX"), 1);
  QV_CHECK_EQ_INT(count_entries(sub, "old-quiver"), 0);
  snprintf(p, sizeof p, "%s/back/state.json", sub);
  QV_CHECK(exists(p));
  snprintf(p, sizeof p, "%s/data.arrow", sub);
  QV_CHECK(exists(p));
  /* a write beside them reclaims too */
  snprintf(p, sizeof p, "%s/.w.tmp-quiver-%d-%llu-gggggg", sub, (int)gone, me);
  put(p, "x");
  snprintf(p, sizeof p, "%s/new.txt", sub);
  QV_CHECK(qv_atomic_write_file(p, "n", 1, &e) == QV_OK);
  QV_CHECK_EQ_INT(count_entries(sub, "-gggggg"), 0);
  QV_CHECK_EQ_INT(count_entries(sub, "-dddddd"), 1);
  QV_CHECK(qv_atomic_reclaim("/nonexistent-dir-qv", NULL, &e) == QV_EIO);
  QV_CHECK(qv_remove_tree(sub, &e) == QV_OK);
  QV_CHECK(!exists(sub));
}

static void test_remove_tree_links(void) {
  char keep[512], tree[512], p[768];
  in_dir(keep, sizeof keep, "keep");
  in_dir(tree, sizeof tree, "tree");
  QV_REQUIRE(mkdir(keep, 0777) == 0);
  snprintf(p, sizeof p, "%s/precious", keep);
  put(p, "x");
  QV_REQUIRE(mkdir(tree, 0777) == 0);
  snprintf(p, sizeof p, "%s/link", tree);
  QV_REQUIRE(symlink(keep, p) == 0);
  qv_error e;
  QV_CHECK(qv_remove_tree(tree, &e) == QV_OK);
  QV_CHECK(!exists(tree));
  snprintf(p, sizeof p, "%s/precious", keep);
  QV_CHECK(exists(p)); /* the link went, not what it points to */
  QV_CHECK(qv_remove_tree(keep, &e) == QV_OK);
  QV_CHECK(qv_remove_tree(keep, &e) == QV_OK); /* missing: fine */
}

/* Build dir `path` holding file "v" = text, through qv_atomic_dir. */
static qv_status build_dir(const char *path, const char *text, bool *exchanged, qv_error *e) {
  qv_atomic_dir *d = NULL;
  qv_status st = qv_atomic_dir_open(path, &d, e);
  if (st != QV_OK) return st;
  char p[768];
  snprintf(p, sizeof p, "%s/v", qv_atomic_dir_tmp(d));
  put(p, text);
  snprintf(p, sizeof p, "%s/sub", qv_atomic_dir_tmp(d));
  mkdir(p, 0777);
  return qv_atomic_dir_commit(d, exchanged, e);
}

static void check_dir_cycle(bool fallback) {
  if (fallback) setenv("QUIVER_TEST_NO_EXCHANGE", "1", 1);
  char ds[512], p[768], buf[64];
  in_dir(ds, sizeof ds, fallback ? "dsf" : "ds");
  qv_error e;
  bool ex = true;
  QV_REQUIRE(build_dir(ds, "one", &ex, &e) == QV_OK);
  QV_CHECK(!ex);
  snprintf(p, sizeof p, "%s/v", ds);
  slurp(p, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf, "one");
  snprintf(p, sizeof p, "%s/only-old", ds);
  put(p, "x");
  QV_REQUIRE(build_dir(ds, "two", &ex, &e) == QV_OK);
  QV_CHECK(ex);
  snprintf(p, sizeof p, "%s/v", ds);
  slurp(p, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf, "two");
  snprintf(p, sizeof p, "%s/only-old", ds);
  QV_CHECK(!exists(p)); /* replaced as a whole, not merged */
  QV_CHECK_EQ_INT(count_entries(g_dir, "-quiver-"), 0);
  /* abort: the old tree stays */
  qv_atomic_dir *d = NULL;
  QV_REQUIRE(qv_atomic_dir_open(ds, &d, &e) == QV_OK);
  QV_CHECK_EQ_INT(count_entries(g_dir, "-quiver-"), 1);
  qv_atomic_dir_abort(d);
  QV_CHECK_EQ_INT(count_entries(g_dir, "-quiver-"), 0);
  snprintf(p, sizeof p, "%s/v", ds);
  slurp(p, buf, sizeof buf);
  QV_CHECK_EQ_STR(buf, "two");
  QV_CHECK(qv_remove_tree(ds, &e) == QV_OK);
  unsetenv("QUIVER_TEST_NO_EXCHANGE");
}

static void test_dir_exchange(void) { check_dir_cycle(false); }
static void test_dir_fallback(void) { check_dir_cycle(true); }

static void test_dir_refusals(void) {
  char f[512];
  in_dir(f, sizeof f, "plain-file");
  put(f, "x");
  qv_error e;
  qv_atomic_dir *d = NULL;
  QV_CHECK(qv_atomic_dir_open(f, &d, &e) == QV_EARG);
  QV_CHECK(strstr(e.message, "not a directory") != NULL);
  QV_CHECK(qv_atomic_dir_open("/nonexistent-dir-qv/ds", &d, &e) == QV_EIO);
  unlink(f);
}

/* The crash hook: a child with QUIVER_TEST_KILL_AT=2 dies by SIGKILL at its
 * second crash point (the first write after the create) and leaves only
 * its temporary, which the next write beside it reclaims. */
static void test_crash_hook(void) {
  char path[512];
  in_dir(path, sizeof path, "crash.txt");
  pid_t p = fork();
  if (p == 0) {
    /* a fresh process: the hook reads its environment once */
    setenv("QUIVER_TEST_KILL_AT", "2", 1);
    execl("/proc/self/exe", "test_atomic", "--write", path, (char *)NULL);
    _exit(3);
  }
  int status = 0;
  waitpid(p, &status, 0);
  QV_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  QV_CHECK(!exists(path));
  QV_CHECK_EQ_INT(count_entries(g_dir, ".crash.txt.tmp-quiver-"), 1);
  qv_error e;
  QV_CHECK(qv_atomic_write_file(path, "ok", 2, &e) == QV_OK);
  QV_CHECK_EQ_INT(count_entries(g_dir, "tmp-quiver"), 0);
  unlink(path);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write") == 0) { /* test_crash_hook's child */
    qv_error e;
    return qv_atomic_write_file(argv[2], "abc", 3, &e) == QV_OK ? 0 : 1;
  }
  const char *t = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/qv-atomic-XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(g_dir) == NULL) return 1;
  QV_RUN(test_file_commit);
  QV_RUN(test_parse_name);
  QV_RUN(test_writer_gone);
  QV_RUN(test_reclaim);
  QV_RUN(test_remove_tree_links);
  QV_RUN(test_dir_exchange);
  QV_RUN(test_dir_fallback);
  QV_RUN(test_dir_refusals);
  QV_RUN(test_crash_hook);
  qv_error e;
  qv_remove_tree(g_dir, &e);
  return QV_TEST_END();
}

/*
 * cmd_build.h - `collc build` (cmd_build.c).
 */
#ifndef COLL_CMD_BUILD_H
#define COLL_CMD_BUILD_H

/* argv[0] is "build"; returns the process exit code. */
int cmd_build(int argc, char **argv);

#endif

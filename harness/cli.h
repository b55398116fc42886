/* The longmix command: one entry point per subcommand. Each takes argc/argv with argv[0]
 * the subcommand name and returns the process exit code: 0 ok, 1 a check failed,
 * 2 bad usage or input. Only harness code prints. */
#ifndef LONGMIX_CLI_H
#define LONGMIX_CLI_H

enum { LM_EXIT_OK = 0, LM_EXIT_CHECK_FAILED = 1, LM_EXIT_USAGE = 2 };

int lm_cmd_verify(int argc, char **argv);
int lm_cmd_info(int argc, char **argv);
int lm_cmd_roofline(int argc, char **argv);
int lm_cmd_sweep(int argc, char **argv);
int lm_cmd_merge(int argc, char **argv);
int lm_cmd_compare(int argc, char **argv);
int lm_cmd_crossover(int argc, char **argv);
int lm_cmd_lesson(int argc, char **argv);
int lm_cmd_compare_machines(int argc, char **argv);
int lm_cmd_model(int argc, char **argv);

#endif

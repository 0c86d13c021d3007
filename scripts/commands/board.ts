import { type Command, InvalidArgumentError } from "commander";
import { createQueues } from "../../indexer/queues/queues.ts";
import { ConfigError, config } from "../../lib/config.ts";
import { Refused } from "../../lib/fail.ts";
import { logger } from "../../lib/log.ts";
import { createOutageReporter } from "../../lib/outages.ts";
import { openRedis, redisFullRefusals, redisVariable } from "../../lib/redis.ts";
import { closeOnSignal } from "../../lib/shutdown.ts";
import { startBoard } from "../../ops/board.ts";

const log = logger("cli");

/** Adds `citizen-staking board` to `program`; its description is its help text. */
export function addBoardCommand(program: Command): void {
  program
    .command("board")
    .description(
      "serve bull-board for the job queues on 127.0.0.1, behind HTTP Basic auth (BOARD_USER, BOARD_PASSWORD)",
    )
    .option(
      "--port <port>",
      "port to listen on",
      (value) => {
        const n = Number(value);
        if (!/^\d+$/.test(value) || n > 65_535) throw new InvalidArgumentError("expected a port");
        return n;
      },
      3001,
    )
    .option(
      "--allow-retries",
      "let operators retry failed jobs (every other change, such as clean, remove, promote or pause, stays refused)",
    )
    .action(async (options: { port: number; allowRetries?: boolean }) => {
      // bull-board finds its page's 570 files in node_modules at run time, which the binary lacks.
      if (Bun.isStandaloneExecutable) {
        throw new Refused(
          "board is not in the compiled binary: run `bun scripts/cli.ts board` from a source checkout",
        );
      }
      const { boardUser: user, boardPassword: password } = config.api;
      if (!user || !password) {
        throw new ConfigError(
          "the board needs BOARD_USER and BOARD_PASSWORD set (its HTTP Basic credentials)",
        );
      }
      const connection = openRedis(config.redis, "queues");
      const queues = createQueues(connection, config.queuePrefix);
      const outages = createOutageReporter(
        redisVariable(config.redis),
        log,
        undefined,
        redisFullRefusals(connection, `${config.queuePrefix}:full-probe`),
      );
      outages.watch(queues.chunks, queues.follow);
      connection.on("ready", () => outages.recovered());
      const allowRetries = options.allowRetries === true;
      const board = await startBoard({
        queues,
        credentials: { user, password },
        port: options.port,
        allowRetries,
      });
      closeOnSignal(
        async () => {
          await board.stop();
          await queues.close();
          await connection.quit();
        },
        { log },
      );
      log.info(
        { url: board.url, queuePrefix: config.queuePrefix, allowRetries },
        allowRetries ? "board listening (retries allowed)" : "board listening (read-only)",
      );
    });
}

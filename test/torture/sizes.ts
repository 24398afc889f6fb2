/** Sizes of the torture runs: bounded for CI, or the full sizes with `--full`. */
export const FULL = process.env.AGENT_CHAT_TORTURE === "full";

export const SIZES = FULL
  ? {
      libPosters: 8,
      libEach: 300,
      cliPosters: 8,
      cliEach: 300,
      readers: 4,
      refEach: 100,
      contenders: 32,
      tasks: 50,
      crashes: 200,
    }
  : {
      libPosters: 8,
      libEach: 120,
      cliPosters: 8,
      cliEach: 8,
      readers: 4,
      refEach: 30,
      contenders: 16,
      tasks: 20,
      crashes: 60,
    };

import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.ts'],
    // The addon is loaded in-process; forks keep one native instance per worker.
    pool: 'forks',
    testTimeout: 20000,
  },
})

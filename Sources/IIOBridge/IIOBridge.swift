// The IIO bridge (DESIGN §8, issue 5). Being built.

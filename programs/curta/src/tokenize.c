/*
 * tokenize.c: the prompt's text into token ids, from section zero's tokenizer blocks, and
 * a finished token's bytes into the log.
 *
 * Encoding is llama2.c's (docs/inference.md): the opening token 1, then a space and the
 * text (UTF-8, checked by openRun), one lookup per character; a character with no token
 * becomes byte + 3 for each of its bytes. Then the adjacent pair whose joined bytes are a
 * token with the highest score key is merged, the leftmost among equals, until no pair
 * is a token.
 * A lookup is a binary search over the sorted ids comparing bytes; among identical strings
 * it finds the lowest id. Steps keep everything in the run's work region: the tokens so
 * far and, per adjacent pair, the token it joins into (or none) and that token's score
 * key, so a merge looks up only the two pairs it changes.
 */
#include "../inference.h"

#define NO_TOKEN 0xFFFFFFFFUL
#define OPENING_TOKEN 1
#define BYTE_TOKEN_BASE 3

typedef struct {
  uint32_t *tokens;
  uint32_t *pair_ids;
  uint32_t *pair_keys;
} Work;

static Work work_of(const Step *s) {
  uint32_t *base = region_u32(s, REGION_WORK);
  uint64_t n = work_entries(s->run);
  Work w = {base, base + n, base + 2 * n};
  return w;
}

static const uint32_t *entry_of(const Step *s, uint64_t id) {
  return block_u32(s, BLOCK_TOKEN_ENTRIES) + TOKEN_ENTRY_SIZE / sizeof(uint32_t) * id;
}

static uint64_t token_length(const Step *s, uint64_t id) { return entry_of(s, id)[1]; }

static const uint8_t *token_bytes(const Step *s, uint64_t id) {
  return s->s0 + entry_of(s, id)[2];
}

/* Compare a with b as byte strings: unsigned bytes, a shorter prefix first. */
static int64_t compare(const uint8_t *a, uint64_t a_len, const uint8_t *b, uint64_t b_len) {
  uint64_t n = a_len < b_len ? a_len : b_len;
  for (uint64_t i = 0; i < n; i++) {
    if (a[i] != b[i]) {
      return (int64_t)a[i] - (int64_t)b[i];
    }
  }
  return (int64_t)a_len - (int64_t)b_len;
}

/* The lowest id whose bytes are str[0..len), or NO_TOKEN. */
static uint64_t lookup(const Step *s, const uint8_t *str, uint64_t len) {
  const uint32_t *sorted = block_u32(s, BLOCK_SORTED_IDS);
  uint64_t lo = 0, hi = s->run->vocab;
  while (lo < hi) {
    uint64_t mid = (lo + hi) / 2;
    uint64_t id = sorted[mid];
    if (compare(token_bytes(s, id), token_length(s, id), str, len) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < s->run->vocab) {
    uint64_t id = sorted[lo];
    if (compare(token_bytes(s, id), token_length(s, id), str, len) == 0) {
      return id;
    }
  }
  return NO_TOKEN;
}

/* What a lookup of `len` bytes may cost: a probe per halving, each comparing <= len bytes. */
static uint64_t lookup_cost(const Step *s, uint64_t len) {
  uint64_t probes = 1;
  for (uint64_t v = s->run->vocab; v; v >>= 1) {
    probes++;
  }
  return LOOKUP_COST(probes, len);
}

/* The pair at i: the token its two tokens join into, and that token's score key. */
static void look_up_pair(const Step *s, const Work *w, uint64_t i) {
  uint8_t *joined = (uint8_t *)SCRATCH; /* scratch bytes: no alignment needed */
  uint64_t a = w->tokens[i], b = w->tokens[i + 1];
  uint64_t a_len = token_length(s, a), b_len = token_length(s, b);
  sol_memcpy_(joined, token_bytes(s, a), a_len);
  sol_memcpy_(joined + a_len, token_bytes(s, b), b_len);
  uint64_t id = lookup(s, joined, a_len + b_len);
  w->pair_ids[i] = (uint32_t)id;
  w->pair_keys[i] = id == NO_TOKEN ? 0 : entry_of(s, id)[0];
}

static uint64_t pair_cost(const Step *s, uint64_t a, uint64_t b) {
  uint64_t len = token_length(s, a) + token_length(s, b);
  return PAIR_COST(len, lookup_cost(s, len));
}

/* The length of the UTF-8 character at text[i]: its lead byte and continuation bytes. */
static uint64_t char_length(const uint8_t *text, uint64_t i, uint64_t n) {
  uint64_t len = 1;
  while (i + len < n && (text[i + len] & 0xC0) == 0x80 && len < 4) {
    len++;
  }
  return len;
}

/* Append the character c[0..len): its token, or one byte token per byte. */
static void append_char(const Step *s, const Work *w, const uint8_t *c, uint64_t len) {
  Run *run = s->run;
  uint64_t id = lookup(s, c, len);
  if (id != NO_TOKEN) {
    w->tokens[run->work_count++] = (uint32_t)id;
    return;
  }
  for (uint64_t i = 0; i < len; i++) {
    w->tokens[run->work_count++] = (uint32_t)(c[i] + BYTE_TOKEN_BASE);
  }
}

static uint64_t char_cost(const Step *s, uint64_t len) {
  return CHAR_COST(len, lookup_cost(s, len));
}

static bool chars(Step *s) {
  Run *run = s->run;
  Work w = work_of(s);
  const uint8_t *text = s->data + run->regions[REGION_PROMPT];
  uint64_t n = run->prompt_length;
  bool progress = false;
  if (run->work_count == 0) {
    if (!spend(s, char_cost(s, 1))) {
      return false;
    }
    w.tokens[run->work_count++] = OPENING_TOKEN;
    append_char(s, &w, (const uint8_t *)" ", 1); /* the space prefix */
    progress = true;
  }
  while (run->cursor < n) {
    uint64_t len = char_length(text, run->cursor, n);
    if (!spend(s, char_cost(s, len))) {
      return progress;
    }
    append_char(s, &w, text + run->cursor, len);
    run->cursor += (uint32_t)len;
    progress = true;
  }
  run->phase = TOK_PAIRS;
  run->cursor = 0;
  return true;
}

static bool pairs(Step *s) {
  Run *run = s->run;
  Work w = work_of(s);
  bool progress = false;
  while (run->cursor + 1 < run->work_count) {
    uint64_t cost = pair_cost(s, w.tokens[run->cursor], w.tokens[run->cursor + 1]);
    if (cost > s->budget) {
      return progress;
    }
    s->budget -= cost;
    look_up_pair(s, &w, run->cursor);
    run->cursor += 1;
    progress = true;
  }
  run->phase = TOK_MERGE;
  run->cursor = 0;
  return true;
}

/* No pair merges any more: the work tokens are the prompt. */
static bool finish(Step *s) {
  Run *run = s->run;
  uint64_t n = run->work_count;
  if (FINISH_COST(n) > s->budget) {
    return false;
  }
  s->budget -= FINISH_COST(n);
  run->prompt_tokens = (uint32_t)n;
  run->phase = PH_EMBED;
  run->cursor = 0;
  if (n >= run->capacity) { /* no room left to generate */
    run->state = RUN_FINISHED;
    run->finish_reason = FINISH_PROMPT_TOO_LONG;
    return true;
  }
  sol_memcpy_(region_u32(s, REGION_TOKENS), work_of(s).tokens, 4 * n);
  run->token_count = (uint32_t)n;
  run->state = RUN_RUNNING;
  return true;
}

static bool merges(Step *s) {
  Run *run = s->run;
  Work w = work_of(s);
  bool progress = false;
  for (;;) {
    uint64_t n = run->work_count;
    uint64_t scan = MERGE_SCAN_COST(n);
    /* The best pair: the highest score key, the leftmost among equals. */
    uint64_t best = NO_TOKEN, best_key = 0;
    for (uint64_t i = 0; i + 1 < n; i++) {
      if (w.pair_ids[i] != NO_TOKEN && (best == NO_TOKEN || w.pair_keys[i] > best_key)) {
        best = i;
        best_key = w.pair_keys[i];
      }
    }
    if (best == NO_TOKEN) {
      return finish(s) || progress;
    }
    uint64_t merged = w.pair_ids[best];
    uint64_t cost = scan + MERGE_SHIFT_COST(n - best);
    if (best > 0) {
      cost += pair_cost(s, w.tokens[best - 1], merged);
    }
    if (best + 2 < n) {
      cost += pair_cost(s, merged, w.tokens[best + 2]);
    }
    if (cost > s->budget) {
      return progress;
    }
    s->budget -= cost;
    w.tokens[best] = (uint32_t)merged;
    for (uint64_t i = best + 1; i + 1 < n; i++) {
      w.tokens[i] = w.tokens[i + 1];
      w.pair_ids[i] = w.pair_ids[i + 1];
      w.pair_keys[i] = w.pair_keys[i + 1];
    }
    /* The last pair slot of the shorter list is no pair any more. */
    w.pair_ids[n - 2] = 0;
    w.pair_keys[n - 2] = 0;
    w.tokens[n - 1] = 0;
    run->work_count = (uint32_t)(n - 1);
    if (best > 0) {
      look_up_pair(s, &w, best - 1);
    }
    if (best + 2 < n) {
      look_up_pair(s, &w, best);
    }
    progress = true;
  }
}

bool tokenize_phase(Step *s) {
  switch (s->run->phase) {
  case TOK_CHARS:
    return chars(s);
  case TOK_PAIRS:
    return pairs(s);
  default:
    return merges(s);
  }
}

static uint64_t hex_digit(uint8_t c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
    return (c | 0x20) - 'a' + 10;
  }
  return 16;
}

void log_token(const Step *s, uint64_t previous, uint64_t token) {
  /* "Program data: <its index in the run and its id, two u32> <the token's bytes>" */
  uint8_t *head = (uint8_t *)SCRATCH; /* 8-aligned: the two u32 below are aligned */
  uint8_t *byte = head + 8;
  ((uint32_t *)head)[0] = s->run->position;
  ((uint32_t *)head)[1] = (uint32_t)token;
  const uint8_t *piece = token_bytes(s, token);
  uint64_t len = token_length(s, token);
  if (token == 1 || token == 2) {
    len = 0; /* an end token adds no text */
  }
  if (previous == OPENING_TOKEN && len && piece[0] == ' ') {
    piece += 1; /* llama2.c drops the space after the opening token */
    len -= 1;
  }
  if (len == 6 && piece[0] == '<' && piece[1] == '0' && piece[2] == 'x' && piece[5] == '>' &&
      hex_digit(piece[3]) < 16 && hex_digit(piece[4]) < 16) {
    byte[0] = (uint8_t)(hex_digit(piece[3]) << 4 | hex_digit(piece[4]));
    piece = byte;
    len = 1;
  }
  SolBytes slices[2] = {{head, 8}, {piece, len}};
  sol_log_data(slices, 2);
}

#pragma once
/*
 * harmony_grammar.h - a grammar for one harmony message (gpt-oss), wrapped
 * in a grammar of the messages around it, so that a chat's JSON schema or
 * forced tool call shapes the answer or the call and not the whole output.
 *
 * The answer: an optional analysis message (free text), then the final
 * channel's content, a sentence of the grammar, then <|return|>:
 *
 *     orch-harmony-root  ::= orch-harmony-think? <|channel|> "final" <|message|> root <|return|>
 *     orch-harmony-think ::= <|channel|> "analysis" <|message|> orch-harmony-text <|end|>
 *                            <|start|> "assistant"
 *     orch-harmony-text  ::= .*
 *
 * A call: the grammar covers its message from the channel name on
 * ("commentary to=functions.NAME <|constrain|>json<|message|>ARGS") and
 * ends with <|call|>. The control tokens are token terminals (grammar.h).
 * docs/grammar.md, "Harmony models".
 */
#include <stdbool.h>

#include "base/err.h"
#include "harmony.h"

/* The wrapped grammar's start rule; every rule it adds begins "orch-harmony-". */
#define HARMONY_GRAMMAR_ROOT "orch-harmony-root"

/*
 * harmony_grammar - the wrapper for a prompt that leaves a parser at @at
 * (harmony_where), then @grammar (GBNF, start rule "root"; @call: a call's
 * message, else the answer), into *@ret (free()d by the caller). The
 * wrapper comes first, so a grammar whose last rule goes on past its end (a
 * trailing '|') cannot swallow it. After "<|start|>assistant" the wrapper
 * starts with the channel; between messages with <|start|> "assistant";
 * inside a final message the client opened, an answer is the grammar and
 * its end. ORCH_EINVAL anywhere else (in @reterr, saying why), ORCH_ENOMEM.
 */
orch_err harmony_grammar(const char *grammar, bool call, enum harmony_at at, char **ret,
                         struct orch_errinfo *reterr);

/*
 * harmony_answer_check - whether @grammar (an answer's: the final
 * channel's content) stays inside its message: ORCH_EINVAL, naming it, when
 * it has a token terminal for one of @hv's structure tokens (<|end|>,
 * <|start|>, <|channel|>, ...), with which an answer could end its message
 * and write others (a tool call nobody declared). A grammar that does not
 * compile is left to the compile that reports it: ORCH_OK. ORCH_ENOMEM.
 */
orch_err harmony_answer_check(const char *grammar, const struct harmony_vocab *hv,
                              struct orch_errinfo *reterr);

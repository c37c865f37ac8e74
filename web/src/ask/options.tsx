/** The query options a person may tune, behind a disclosure; empty fields keep the index's defaults. */
import type { OptionsForm } from "./logic";

export function QueryOptions({
  value,
  onChange,
  problem,
}: {
  value: OptionsForm;
  onChange: (next: OptionsForm) => void;
  problem: { field: keyof OptionsForm; message: string } | null;
}) {
  const set = <K extends keyof OptionsForm>(name: K, v: OptionsForm[K]) => onChange({ ...value, [name]: v });
  const invalid = (name: keyof OptionsForm) => (problem?.field === name ? true : undefined);
  const described = (name: keyof OptionsForm) => (problem?.field === name ? "options-problem" : undefined);
  const changed = Object.values(value).filter((v) => v !== "").length;
  return (
    <>
    <details class="options">
      <summary>Query options{changed ? ` (${changed} set)` : ""}</summary>
      <p class="muted">Empty fields keep the index's defaults (the project's configuration).</p>
      <div class="options-grid">
        <label for="opt-top-k">Sources per type (top_k)</label>
        <input
          id="opt-top-k"
          inputMode="numeric"
          value={value.top_k}
          aria-invalid={invalid("top_k")}
          aria-describedby={described("top_k")}
          onInput={(e) => set("top_k", e.currentTarget.value)}
        />
        <label for="opt-budget">Context budget, tokens</label>
        <input
          id="opt-budget"
          inputMode="numeric"
          value={value.max_context_tokens}
          aria-invalid={invalid("max_context_tokens")}
          aria-describedby={described("max_context_tokens")}
          onInput={(e) => set("max_context_tokens", e.currentTarget.value)}
        />
        <label for="opt-deadline">Deadline, seconds</label>
        <input
          id="opt-deadline"
          inputMode="decimal"
          value={value.deadline_s}
          aria-invalid={invalid("deadline_s")}
          aria-describedby={described("deadline_s")}
          onInput={(e) => set("deadline_s", e.currentTarget.value)}
        />
        <label for="opt-mode">Search mode</label>
        <select id="opt-mode" value={value.mode} onChange={(e) => set("mode", e.currentTarget.value as OptionsForm["mode"])}>
          <option value="">default</option>
          <option value="hybrid">hybrid (words and meaning)</option>
          <option value="lexical">lexical (words)</option>
          <option value="vector">vector (meaning)</option>
        </select>
        <label for="opt-style">Answer style</label>
        <select
          id="opt-style"
          value={value.answer_style}
          onChange={(e) => set("answer_style", e.currentTarget.value as OptionsForm["answer_style"])}
        >
          <option value="">default</option>
          <option value="auto">auto</option>
          <option value="concise">concise</option>
          <option value="comprehensive">comprehensive</option>
        </select>
      </div>
    </details>
      {problem ? (
        <p id="options-problem" class="problem" role="alert">
          {problem.message}
        </p>
      ) : null}
    </>
  );
}

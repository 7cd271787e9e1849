;;; lsp-spark.el --- AI code completions from lsp-spark for lsp-mode and eglot  -*- lexical-binding: t; -*-

;; Author: lsp-spark contributors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: languages, tools, convenience

;; This file is not part of GNU Emacs.

;;; Commentary:

;; lsp-spark is a language server that suggests code with a fast model
;; (Cerebras by default).  This package connects it to Emacs through
;; either LSP client:
;;
;; lsp-mode (9.0.1 or later): lsp-spark runs as an add-on server next to
;; the language's usual server, and `lsp-inline-completion-mode' shows
;; its suggestions as ghost text.  Nothing to call: load this file after
;; lsp-mode and run `lsp' as usual.
;;
;; eglot: eglot talks to one server per buffer, so in the major modes
;; you choose lsp-spark REPLACES the language's usual server (no
;; diagnostics, go-to-definition, etc. from it there).  Add
;; `lsp-spark-eglot-ensure' to those modes' hooks.  Suggestions arrive
;; through `completion-at-point' as one candidate; refactorings through
;; `eglot-code-actions'.
;;
;; Both: `lsp-spark-stats' shows latency and cache figures,
;; `lsp-spark-edit-with-instruction' rewrites the region as instructed.

;;; Code:

(require 'cl-lib)
(eval-when-compile (require 'subr-x))

(defgroup lsp-spark nil
  "AI code completions from the lsp-spark language server."
  :group 'tools
  :prefix "lsp-spark-")

(defcustom lsp-spark-command '("lsp-spark" "serve")
  "Command line that starts the lsp-spark server on stdio."
  :type '(repeat string))

(defcustom lsp-spark-settings nil
  "Settings sent to the server as its `lspSpark' section.
A plist with the camelCase keys of the server's settings, such as
\(:backend \"cerebras\" :model \"gpt-oss-120b\" :debounceMs 50).  Use
`:json-false' for false.  They go out as initializationOptions and
through the client's workspace configuration, and take precedence
over the environment and the user's config.toml."
  :type '(plist :key-type keyword :value-type sexp))

(defcustom lsp-spark-lsp-enable t
  "Whether lsp-mode starts lsp-spark next to each buffer's usual server."
  :type 'boolean)

(defcustom lsp-spark-lsp-inline-completion t
  "Whether to turn on `lsp-inline-completion-mode' where lsp-spark runs."
  :type 'boolean)

(defcustom lsp-spark-edit-timeout 60
  "Seconds to wait for `lsp-spark-edit-with-instruction' to finish."
  :type 'number)

(defconst lsp-spark--stats-method "lspSpark/stats")
(defconst lsp-spark--edit-command "lspSpark.editWithInstruction")

(defvar lsp--cur-workspace)
(defvar eglot-confirm-server-initiated-edits)
(defvar lsp-response-timeout)
(defvar eglot-server-programs)
(defvar eglot-workspace-configuration)

(declare-function lsp-register-client "lsp-mode" (client))
(declare-function make-lsp-client "lsp-mode" (&rest args))
(declare-function lsp-stdio-connection "lsp-mode" (command &optional test-command))
(declare-function lsp-find-workspace "lsp-mode" (server-id &optional file-name))
(declare-function lsp-notify "lsp-mode" (method params))
(declare-function lsp-request "lsp-mode" (method params &rest args))
(declare-function lsp--buffer-uri "lsp-mode" ())
(declare-function lsp--region-to-range "lsp-mode" (start end))
(declare-function lsp-inline-completion-mode "lsp-inline-completion" (&optional arg))
(declare-function eglot-ensure "eglot" ())
(declare-function eglot-current-server "eglot" ())
(declare-function eglot--server-info "eglot" (server))
(declare-function eglot--TextDocumentIdentifier "eglot" ())
(declare-function eglot--pos-to-lsp-position "eglot" (&optional pos))
(declare-function eglot--signal-textDocument/didChange "eglot" ())
(declare-function jsonrpc-request "jsonrpc" (connection method params &rest args))

(defun lsp-spark--settings-object ()
  "`lsp-spark-settings' as a JSON object; {} rather than null when empty."
  (or lsp-spark-settings (make-hash-table :test #'equal)))

(defun lsp-spark--get (object &rest keys)
  "The value at the path KEYS (strings) in OBJECT.
OBJECT is a decoded JSON object: a plist (eglot, lsp-mode with
plists) or a hash table (lsp-mode's default)."
  (dolist (key keys object)
    (setq object (cond ((hash-table-p object) (gethash key object))
                       ((consp object) (plist-get object (intern (concat ":" key))))))))

;;;; lsp-mode

(defun lsp-spark--lsp-workspace ()
  "The lsp-mode workspace of lsp-spark for this buffer, if any."
  (and (bound-and-true-p lsp-mode)
       (fboundp 'lsp-find-workspace)
       (lsp-find-workspace 'lsp-spark (buffer-file-name))))

(defun lsp-spark--lsp-initialized (workspace)
  "Push the settings to WORKSPACE, once started, as its `lspSpark' section."
  (let ((lsp--cur-workspace workspace))
    (lsp-notify "workspace/didChangeConfiguration"
                (list :settings (list :lspSpark (lsp-spark--settings-object))))))

(defun lsp-spark--lsp-after-open (&rest _)
  "Show lsp-spark's suggestions as ghost text in this buffer."
  (when (and lsp-spark-lsp-inline-completion
             (require 'lsp-inline-completion nil t)
             (fboundp 'lsp-inline-completion-mode))
    (lsp-inline-completion-mode 1)))

(with-eval-after-load 'lsp-mode
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () lsp-spark-command))
    :activation-fn (lambda (&rest _) lsp-spark-lsp-enable)
    :add-on? t
    :server-id 'lsp-spark
    :completion-in-comments? t
    :initialization-options #'lsp-spark--settings-object
    :initialized-fn #'lsp-spark--lsp-initialized
    :after-open-fn #'lsp-spark--lsp-after-open)))

;;;; eglot

(defvar lsp-spark--eglot-base-configuration nil
  "`eglot-workspace-configuration' as it was before lsp-spark wrapped it.")

(defun lsp-spark--eglot-contact (&optional _interactive)
  "Return the eglot contact for lsp-spark: `lsp-spark-command' and the settings."
  (append lsp-spark-command
          (list :initializationOptions
                (lambda (_server) (lsp-spark--settings-object)))))

(defun lsp-spark--as-plist (configuration)
  "A fresh plist copy of CONFIGURATION, an eglot plist or alist of sections."
  (if (consp (car-safe configuration))
      (cl-loop for (section . value) in configuration
               collect (if (keywordp section) section (intern (format ":%s" section)))
               collect value)
    (copy-sequence configuration)))

(defun lsp-spark-eglot-workspace-configuration (server)
  "The user's eglot workspace configuration for SERVER plus the `lspSpark' section."
  (let ((base (if (functionp lsp-spark--eglot-base-configuration)
                  (funcall lsp-spark--eglot-base-configuration server)
                lsp-spark--eglot-base-configuration)))
    (plist-put (lsp-spark--as-plist base) :lspSpark (lsp-spark--settings-object))))

(defun lsp-spark--language-id (mode)
  "The LSP language id of MODE: \"python\" for `python-mode' and `python-ts-mode'."
  (or (get mode 'eglot-language-id)
      (replace-regexp-in-string "\\(?:-ts\\)?-mode\\'" "" (symbol-name mode))))

(defun lsp-spark--eglot-setup (mode)
  "Make eglot start lsp-spark for MODE and answer for the `lspSpark' section."
  (let ((entry (cons (list mode :language-id (lsp-spark--language-id mode))
                     #'lsp-spark--eglot-contact)))
    (setq eglot-server-programs (cons entry (delete entry eglot-server-programs))))
  (unless (eq (default-value 'eglot-workspace-configuration)
              #'lsp-spark-eglot-workspace-configuration)
    (setq lsp-spark--eglot-base-configuration
          (default-value 'eglot-workspace-configuration))
    (setq-default eglot-workspace-configuration
                  #'lsp-spark-eglot-workspace-configuration)))

;;;###autoload
(defun lsp-spark-eglot-ensure ()
  "Start eglot with lsp-spark as the server for this buffer's major mode.
Meant for mode hooks, e.g. (add-hook \\='python-mode-hook
#\\='lsp-spark-eglot-ensure).  eglot manages a buffer with one server
only, so in these modes lsp-spark takes the place of the language's
usual server."
  (require 'eglot)
  (lsp-spark--eglot-setup major-mode)
  (eglot-ensure))

(defun lsp-spark--eglot-server ()
  "The eglot server of this buffer, if eglot manages it with lsp-spark."
  (when-let* ((server (and (fboundp 'eglot-current-server) (eglot-current-server))))
    (if (equal (plist-get (eglot--server-info server) :name) "lsp-spark")
        server
      (user-error "The eglot server of this buffer is not lsp-spark"))))

;;;; Commands

(defun lsp-spark--client ()
  "The client talking to lsp-spark for this buffer.
\(lsp-mode . WORKSPACE) or (eglot . SERVER); a `user-error' if none."
  (let (found)
    (cond ((setq found (lsp-spark--lsp-workspace)) (cons 'lsp-mode found))
          ((setq found (lsp-spark--eglot-server)) (cons 'eglot found))
          (t (user-error "No lsp-spark server runs in this buffer")))))

(defun lsp-spark--request (client method params &optional timeout)
  "Send METHOD with PARAMS to lsp-spark through CLIENT; return the result.
Wait at most TIMEOUT seconds, or the client's default."
  (pcase client
    (`(lsp-mode . ,workspace)
     (let ((lsp--cur-workspace workspace)
           (lsp-response-timeout (or timeout lsp-response-timeout)))
       (lsp-request method params)))
    (`(eglot . ,server)
     (apply #'jsonrpc-request server (intern (concat ":" method)) params
            (and timeout (list :timeout timeout))))))

(defun lsp-spark--ms (value)
  "VALUE, milliseconds or nil, for people."
  (if (numberp value) (format "%d ms" (round value)) "n/a"))

(defun lsp-spark--stats-summary (stats)
  "One line about STATS, the server's `lspSpark/stats' answer."
  (let ((rate (lsp-spark--get stats "lastTokensPerSecond"))
        (hits (lsp-spark--get stats "cacheHitRate")))
    (format (concat "lsp-spark: %s/%s, %s requests, %s suggestions, last %s%s, "
                    "p50 %s, p95 %s, cache hits %s, shown %s, accepted %s")
            (lsp-spark--get stats "backend")
            (lsp-spark--get stats "model")
            (lsp-spark--get stats "requests")
            (lsp-spark--get stats "suggestions")
            (lsp-spark--ms (lsp-spark--get stats "lastLatencyMs"))
            (if (numberp rate) (format " at %d tok/s" (round rate)) "")
            (lsp-spark--ms (lsp-spark--get stats "latencyMs" "p50"))
            (lsp-spark--ms (lsp-spark--get stats "latencyMs" "p95"))
            (if (numberp hits) (format "%d%%" (round (* 100 hits))) "n/a")
            (lsp-spark--get stats "shown")
            (lsp-spark--get stats "accepted"))))

(defun lsp-spark--insert-object (object indent)
  "Insert OBJECT, a decoded JSON object, one key a line at INDENT."
  (let (pairs)
    (if (hash-table-p object)
        (maphash (lambda (key value) (push (cons key value) pairs)) object)
      (cl-loop for (key value) on object by #'cddr
               do (push (cons (substring (symbol-name key) 1) value) pairs)))
    (dolist (pair (nreverse pairs))
      (insert (make-string indent ?\s) (car pair) ":")
      (if (or (hash-table-p (cdr pair)) (keywordp (car-safe (cdr pair))))
          (progn (insert "\n") (lsp-spark--insert-object (cdr pair) (+ indent 2)))
        (insert (pcase (cdr pair)
                  ('nil " n/a\n")
                  ((pred floatp) (format " %.1f\n" (cdr pair)))
                  (value (format " %s\n" value))))))))

;;;###autoload
(defun lsp-spark-stats (&optional full)
  "Show lsp-spark's latency, throughput and cache figures in the echo area.
With prefix argument FULL, also show every figure in a buffer.
Return the one-line summary."
  (interactive "P")
  (let* ((stats (lsp-spark--request (lsp-spark--client) lsp-spark--stats-method nil))
         (summary (lsp-spark--stats-summary stats)))
    (when full
      (with-current-buffer (get-buffer-create "*lsp-spark stats*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (lsp-spark--insert-object stats 0))
        (special-mode)
        (display-buffer (current-buffer))))
    (message "%s" summary)
    summary))

;;;###autoload
(defun lsp-spark-edit-with-instruction (instruction &optional beg end)
  "Have lsp-spark rewrite the region from BEG to END following INSTRUCTION.
Interactively, the active region, or an empty range at point to have
code inserted there.  The server applies the edit through the client."
  (interactive
   (list (read-string "lsp-spark instruction: ")
         (and (use-region-p) (region-beginning))
         (and (use-region-p) (region-end))))
  (let* ((client (lsp-spark--client))
         (beg (or beg (point)))
         (end (or end beg))
         (document
          (if (eq (car client) 'lsp-mode)
              (list :uri (lsp--buffer-uri) :range (lsp--region-to-range beg end))
            (eglot--signal-textDocument/didChange)
            (list :uri (plist-get (eglot--TextDocumentIdentifier) :uri)
                  :range (list :start (eglot--pos-to-lsp-position beg)
                               :end (eglot--pos-to-lsp-position end))))))
    ;; The user asked for this edit: eglot need not ask again before applying it.
    (let ((eglot-confirm-server-initiated-edits nil))
      (lsp-spark--request
       client "workspace/executeCommand"
       (list :command lsp-spark--edit-command
             :arguments (vector (append document (list :instruction instruction))))
       lsp-spark-edit-timeout))))

(provide 'lsp-spark)
;;; lsp-spark.el ends here

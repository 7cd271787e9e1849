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
;; `lsp-spark-eglot-ensure' to those modes' hooks.  eglot has no ghost
;; text of its own, so `lsp-spark-inline-mode' (turned on by
;; `lsp-spark-eglot-ensure') asks for `textDocument/inlineCompletion'
;; through eglot's connection as you type and shows the answer after
;; the cursor: TAB accepts it, M-f a word, C-e a line, M-n/M-p cycle,
;; C-g dismisses.  `lsp-spark-next-edit-mode' (also turned on) asks
;; where the next edit is after each change and shows it in place, the
;; old text struck through and the new after it: TAB goes there, TAB
;; again makes it (and shows the one after), C-g dismisses.  The
;; suggestion is also a `completion-at-point' candidate; refactorings
;; come through `eglot-code-actions'.
;;
;; Both: `lsp-spark-stats' shows latency and cache figures,
;; `lsp-spark-edit-with-instruction' rewrites the region as instructed.

;;; Code:

(require 'cl-lib)
(require 'seq)
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

(defcustom lsp-spark-eglot-ghost-text t
  "Whether `lsp-spark-eglot-ensure' turns on `lsp-spark-inline-mode'."
  :type 'boolean)

(defcustom lsp-spark-eglot-next-edit t
  "Whether `lsp-spark-eglot-ensure' turns on `lsp-spark-next-edit-mode'."
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
(defvar eglot--versioned-identifier)
(defvar lsp-spark-next-edit-mode)

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
(declare-function jsonrpc-async-request "jsonrpc" (connection method params &rest args))
(declare-function jsonrpc--async-request-1 "jsonrpc" (connection method params &rest args))
(declare-function jsonrpc-notify "jsonrpc" (connection method params))
(declare-function eglot-managed-p "eglot" ())
(declare-function eglot--TextDocumentPositionParams "eglot" ())
(declare-function eglot--range-region "eglot" (range &optional markers))
(declare-function eglot--VersionedTextDocumentIdentifier "eglot" ())
(declare-function eglot--apply-text-edits "eglot" (edits &optional version))
(declare-function flymake-diagnostic-data "flymake" (diag))
(declare-function flymake-diagnostic-type "flymake" (diag))
(declare-function flymake-diagnostic-backend "flymake" (diag))
(declare-function flymake-diagnostic-text "flymake" (diag))

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
usual server.  Turns on `lsp-spark-inline-mode' for ghost text (see
`lsp-spark-eglot-ghost-text') and `lsp-spark-next-edit-mode' for the
edits predicted next (see `lsp-spark-eglot-next-edit')."
  (require 'eglot)
  (lsp-spark--eglot-setup major-mode)
  (when lsp-spark-eglot-ghost-text
    (lsp-spark-inline-mode 1))
  (when lsp-spark-eglot-next-edit
    (lsp-spark-next-edit-mode 1))
  (eglot-ensure))

(defun lsp-spark--eglot-server ()
  "The eglot server of this buffer, if eglot manages it with lsp-spark."
  (when-let* ((server (and (fboundp 'eglot-current-server) (eglot-current-server))))
    (if (equal (plist-get (eglot--server-info server) :name) "lsp-spark")
        server
      (user-error "The eglot server of this buffer is not lsp-spark"))))

;;;; eglot: ghost text

(defface lsp-spark-ghost-text
  ;; `shadow' is grey70 on dark backgrounds, hardly dimmer than code in
  ;; most terminals' and themes' default foreground.
  '((((class color) (min-colors 88) (background dark))
     :inherit shadow :foreground "grey50")
    (t :inherit shadow))
  "Face of the suggestion shown after the cursor.")

(defcustom lsp-spark-inline-idle-delay 0
  "Seconds without typing before asking for ghost text.
At 0, ask after every command that edits the buffer, once Emacs has
handled the keys already typed (keys typed faster than that are
asked about together)."
  :type 'number)

(defcustom lsp-spark-inline-shown-hook nil
  "Hook run after a suggestion from the server is put on screen."
  :type 'hook)

(defvar lsp-spark-inline-active-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'lsp-spark-inline-accept)
    (define-key map (kbd "<tab>") #'lsp-spark-inline-accept)
    (define-key map (kbd "M-f") #'lsp-spark-inline-accept-word)
    (define-key map (kbd "C-<right>") #'lsp-spark-inline-accept-word)
    (define-key map (kbd "C-e") #'lsp-spark-inline-accept-line)
    (define-key map (kbd "M-n") #'lsp-spark-inline-next)
    (define-key map (kbd "M-p") #'lsp-spark-inline-previous)
    (define-key map (kbd "C-g") #'lsp-spark-inline-dismiss)
    map)
  "Keys active while a suggestion is shown; every other key works as usual.")

(defconst lsp-spark--inline-method :textDocument/inlineCompletion)
(defconst lsp-spark--partial-accept-method :textDocument/didPartiallyAcceptCompletion)
(defconst lsp-spark--trigger-invoked 1 "InlineCompletionTriggerKind.Invoked.")
(defconst lsp-spark--trigger-automatic 2 "InlineCompletionTriggerKind.Automatic.")

(defvar-local lsp-spark--inline-showing nil
  "Non-nil while a suggestion is on screen.
Then `lsp-spark-inline-active-map' is active.")

(defvar lsp-spark--inline-map-alist
  `((lsp-spark--inline-showing . ,lsp-spark-inline-active-map))
  "The entry of `emulation-mode-map-alists' that activates the keys.
Emulation maps come before minor modes' maps, so TAB accepts even
where another mode binds it.")

(defvar-local lsp-spark--inline-overlay nil "The overlay showing the suggestion.")
(defvar-local lsp-spark--inline-items []
  "The items of the last answer: a vector of (ITEM START . END).
START and END are markers at the ends of the item's range, so that
the range follows what is typed or accepted since: START stays before
text inserted there, END after it.")
(defvar-local lsp-spark--inline-index 0 "Which of `lsp-spark--inline-items' is shown.")
(defvar-local lsp-spark--inline-text nil
  "What accepting the shown item inserts at point.
The item's text less what is typed already.")
(defvar-local lsp-spark--inline-invoked nil
  "Non-nil once the server was asked for alternatives to the shown suggestion.")
(defvar-local lsp-spark--inline-generation 0
  "Counts requests: an answer is used only if no newer request was made.")
(defvar-local lsp-spark--inline-pending nil
  "The id of the request in flight, to cancel when the user moves on.")
(defvar-local lsp-spark--inline-timer nil "The idle timer of `lsp-spark-inline-idle-delay'.")
(defvar-local lsp-spark--inline-tick nil
  "`buffer-chars-modified-tick' before the current command: did it edit?")

(defun lsp-spark--inline-server ()
  "This buffer's eglot server when it is lsp-spark, else nil."
  (when-let* ((server (and (fboundp 'eglot-managed-p) (eglot-managed-p)
                           (eglot-current-server))))
    (and (equal (plist-get (eglot--server-info server) :name) "lsp-spark") server)))

(defun lsp-spark--inline-string (text)
  "TEXT, an item's `insertText': a string or a StringValue (a snippet)."
  (if (stringp text) text (or (plist-get text :value) "")))

(defun lsp-spark--utf16-length (text)
  "The length of TEXT in UTF-16 code units, as LSP counts."
  (/ (length (encode-coding-string text 'utf-16le t)) 2))

;;; Showing

(defun lsp-spark--inline-entry (item)
  "ITEM with markers at its range, converted by eglot from the server's
position encoding (the cursor when it has no range)."
  (pcase-let ((`(,start . ,end)
               (if-let* ((range (plist-get item :range)))
                   (eglot--range-region range t)
                 (cons (point-marker) (point-marker)))))
    (set-marker-insertion-type end t)
    (cons item (cons start end))))

(defun lsp-spark--inline-render (end)
  "Show `lsp-spark--inline-text' at point in place of the text up to END."
  (when lsp-spark--inline-overlay (delete-overlay lsp-spark--inline-overlay))
  (let ((overlay (make-overlay (point) end nil nil t))
        (ghost (propertize lsp-spark--inline-text 'face 'lsp-spark-ghost-text)))
    ;; The cursor stays at its place, before the ghost text, not after it.
    (put-text-property 0 1 'cursor t ghost)
    (overlay-put overlay 'priority 1000)
    ;; The text the item replaces (an auto-inserted `)') is hidden behind
    ;; the ghost text, which ends with it, rather than shown twice.
    (overlay-put overlay (if (= end (point)) 'after-string 'display) ghost)
    (setq lsp-spark--inline-overlay overlay
          lsp-spark--inline-showing t)))

(defun lsp-spark--inline-show (index)
  "Show item INDEX of `lsp-spark--inline-items'; nil if it has nothing to add here.
Point must be in the item's range, and what is typed from the range's
start to point must begin the item's text: the rest is shown, in
place of the rest of the range."
  (pcase-let* ((`(,item ,start . ,end) (aref lsp-spark--inline-items index))
               (text (lsp-spark--inline-string (plist-get item :insertText)))
               (typed (and (<= start (point) end)
                           (buffer-substring-no-properties start (point)))))
    (when (and typed (string-prefix-p typed text)
               (> (length text) (length typed)))
      (setq lsp-spark--inline-index index
            lsp-spark--inline-text (substring text (length typed)))
      (lsp-spark--inline-render (marker-position end))
      t)))

(defun lsp-spark--inline-forget-items ()
  "Drop the items and their markers."
  (seq-doseq (entry lsp-spark--inline-items)
    (set-marker (cadr entry) nil)
    (set-marker (cddr entry) nil))
  (setq lsp-spark--inline-items [] lsp-spark--inline-index 0))

(defun lsp-spark--inline-clear ()
  "Take the suggestion off the screen and forget it."
  (when lsp-spark--inline-overlay
    (delete-overlay lsp-spark--inline-overlay))
  (lsp-spark--inline-forget-items)
  (setq lsp-spark--inline-overlay nil
        lsp-spark--inline-showing nil
        lsp-spark--inline-text nil
        lsp-spark--inline-invoked nil))

;;; Asking

(defun lsp-spark--inline-cancel ()
  "Tell the server the request in flight is no longer wanted.
Only when the user moved on without typing: a keystroke's own request
supersedes (or, typing through the suggestion, rides on) the older
one in the server, so its answer is merely ignored."
  (when-let* ((id lsp-spark--inline-pending)
              (server (lsp-spark--inline-server)))
    (jsonrpc-notify server :$/cancelRequest (list :id id)))
  (setq lsp-spark--inline-pending nil)
  (cl-incf lsp-spark--inline-generation))

(defun lsp-spark--inline-request (trigger-kind on-items)
  "Ask lsp-spark for ghost text at point; call ON-ITEMS with the items.
TRIGGER-KIND is the LSP InlineCompletionTriggerKind.  ON-ITEMS runs
in this buffer with a list of entries (see `lsp-spark--inline-items'),
and only if nothing was typed nor moved and no newer request was made
since."
  (when-let* ((server (lsp-spark--inline-server)))
    ;; eglot sends its changes after an idle delay, and holds deferred
    ;; requests until they are sent: send them now, the request goes at once.
    (eglot--signal-textDocument/didChange)
    (let* ((buffer (current-buffer))
           (generation (cl-incf lsp-spark--inline-generation))
           (tick (buffer-chars-modified-tick))
           (position (point)))
      (setq lsp-spark--inline-pending
            ;; `jsonrpc-async-request' returns the request's id only in
            ;; newer jsonrpc versions; the function behind it does in all.
            (car (jsonrpc--async-request-1
                  server lsp-spark--inline-method
                  (append (eglot--TextDocumentPositionParams)
                          (list :context (list :triggerKind trigger-kind)))
                  :deferred lsp-spark--inline-method
                  :success-fn
                  (lambda (answer)
                    (when (buffer-live-p buffer)
                      (with-current-buffer buffer
                        (when (and (= generation lsp-spark--inline-generation)
                                   (= tick (buffer-chars-modified-tick))
                                   (= position (point)))
                          (setq lsp-spark--inline-pending nil)
                          (funcall on-items
                                   (mapcar #'lsp-spark--inline-entry
                                           (if (vectorp answer) answer
                                             (plist-get answer :items))))))))
                  :error-fn #'ignore
                  :timeout-fn #'ignore))))))

(defun lsp-spark--inline-show-first (entries)
  "Show the first of ENTRIES that has something to add at point."
  (lsp-spark--inline-clear)
  (setq lsp-spark--inline-items (vconcat entries))
  (if (cl-loop for index below (length entries)
               thereis (lsp-spark--inline-show index))
      (run-hooks 'lsp-spark-inline-shown-hook)
    (lsp-spark--inline-forget-items)))

(defun lsp-spark-inline-complete ()
  "Ask lsp-spark for ghost text at point now."
  (interactive)
  (lsp-spark--inline-request lsp-spark--trigger-invoked #'lsp-spark--inline-show-first))

(defun lsp-spark--inline-ask ()
  "Ask for ghost text after an edit (the automatic trigger)."
  (when lsp-spark--inline-timer
    (cancel-timer lsp-spark--inline-timer)
    (setq lsp-spark--inline-timer nil))
  (if (> lsp-spark-inline-idle-delay 0)
      (setq lsp-spark--inline-timer
            (run-with-idle-timer
             lsp-spark-inline-idle-delay nil
             (let ((buffer (current-buffer)))
               (lambda ()
                 (when (eq buffer (current-buffer))
                   (setq lsp-spark--inline-timer nil)
                   (lsp-spark--inline-request lsp-spark--trigger-automatic
                                              #'lsp-spark--inline-show-first))))))
    (lsp-spark--inline-request lsp-spark--trigger-automatic
                               #'lsp-spark--inline-show-first)))

;;; Accepting

(defun lsp-spark--inline-take (count)
  "Insert the first COUNT characters of the suggestion; nil if none is shown.
All of it: the text the item replaces goes, the item's command runs
and the next suggestion is asked for.  Part of it: the server is told
with `textDocument/didPartiallyAcceptCompletion' and the rest stays."
  (when lsp-spark--inline-showing
    (pcase-let* ((server (lsp-spark--inline-server))
                 (`(,item ,start . ,end) (aref lsp-spark--inline-items lsp-spark--inline-index))
                 (text lsp-spark--inline-text))
      (if (< count (length text))
          (progn
            (insert (substring text 0 count))
            (lsp-spark--inline-show lsp-spark--inline-index)
            (when server
              (jsonrpc-notify server lsp-spark--partial-accept-method
                              (list :item item
                                    :acceptedLength (lsp-spark--utf16-length
                                                     (buffer-substring-no-properties
                                                      start (point)))))))
        (delete-region (point) (max (point) end))
        (lsp-spark--inline-clear)
        (insert text)
        (when-let* ((command (and server (plist-get item :command))))
          (jsonrpc-async-request server :workspace/executeCommand
                                 (list :command (plist-get command :command)
                                       :arguments (or (plist-get command :arguments) []))
                                 :success-fn #'ignore :error-fn #'ignore
                                 :timeout-fn #'ignore))
        (lsp-spark--inline-ask))
      t)))

(defun lsp-spark-inline-accept ()
  "Insert the whole suggestion."
  (interactive)
  (lsp-spark--inline-take (length lsp-spark--inline-text)))

(defun lsp-spark-inline-accept-word ()
  "Insert the suggestion's next word (with the blanks before it)."
  (interactive)
  (let ((text lsp-spark--inline-text))
    (lsp-spark--inline-take
     (if (string-match "\\`[ \t\n]*\\(?:\\(?:\\sw\\|\\s_\\)+\\|[^ \t\n]\\)" text)
         (match-end 0)
       (length text)))))

(defun lsp-spark-inline-accept-line ()
  "Insert the suggestion up to the end of its first line that is not blank."
  (interactive)
  (let ((text lsp-spark--inline-text))
    (lsp-spark--inline-take
     (if (string-match "\\`[ \t\n]*[^\n]*" text) (match-end 0) (length text)))))

(defun lsp-spark--inline-step (step)
  "Show the item STEP places from the shown one, or say there is none."
  (let ((count (length lsp-spark--inline-items)))
    (if (and (> count 1)
             (cl-loop for offset from 1 below count
                      thereis (lsp-spark--inline-show
                               (mod (+ lsp-spark--inline-index (* step offset)) count))))
        (message "lsp-spark: suggestion %d of %d" (1+ lsp-spark--inline-index) count)
      (message "lsp-spark: no other suggestion"))))

(defun lsp-spark--inline-cycle (step)
  "Show the suggestion STEP places away, asking the server for alternatives first."
  (when lsp-spark--inline-showing
    (if lsp-spark--inline-invoked
        (lsp-spark--inline-step step)
      (lsp-spark--inline-request
       lsp-spark--trigger-invoked
       (lambda (entries)
         (setq lsp-spark--inline-invoked t)
         (dolist (entry entries)
           (if (cl-find (lsp-spark--inline-string (plist-get (car entry) :insertText))
                        lsp-spark--inline-items
                        :key (lambda (known)
                               (lsp-spark--inline-string (plist-get (car known) :insertText)))
                        :test #'equal)
               (progn (set-marker (cadr entry) nil) (set-marker (cddr entry) nil))
             (setq lsp-spark--inline-items
                   (vconcat lsp-spark--inline-items (list entry)))))
         (lsp-spark--inline-step step))))))

(defun lsp-spark-inline-next ()
  "Show the next suggestion."
  (interactive)
  (lsp-spark--inline-cycle 1))

(defun lsp-spark-inline-previous ()
  "Show the previous suggestion."
  (interactive)
  (lsp-spark--inline-cycle -1))

(defun lsp-spark-inline-dismiss ()
  "Take the suggestion away (and stop the request in flight)."
  (interactive)
  (lsp-spark--inline-cancel)
  (lsp-spark--inline-clear))

(dolist (command '(lsp-spark-inline-accept lsp-spark-inline-accept-word
                   lsp-spark-inline-accept-line lsp-spark-inline-next
                   lsp-spark-inline-previous lsp-spark-inline-dismiss
                   lsp-spark-inline-complete))
  (put command 'lsp-spark-inline t))

;;; Following the user's commands

(defun lsp-spark--inline-pre-command ()
  "Note the buffer's state before a command, to tell whether it edited."
  (setq lsp-spark--inline-tick (buffer-chars-modified-tick)))

(defun lsp-spark--inline-post-command ()
  "Follow the command just run: keep, shorten or clear the suggestion; ask again.
Typing the suggestion's next characters (or deleting them again)
keeps the rest on screen until the server's answer for the new text
arrives; any other command that is not one of ours clears it."
  (unless (and (symbolp this-command) (get this-command 'lsp-spark-inline))
    (let ((edited (and lsp-spark--inline-tick
                       (/= lsp-spark--inline-tick (buffer-chars-modified-tick)))))
      (unless (and edited lsp-spark--inline-showing
                   (lsp-spark--inline-show lsp-spark--inline-index))
        (lsp-spark--inline-clear))
      (cond (edited (unless (input-pending-p) (lsp-spark--inline-ask)))
            (lsp-spark--inline-pending (lsp-spark--inline-cancel))))))

;;;###autoload
(define-minor-mode lsp-spark-inline-mode
  "Show lsp-spark's suggestions after the cursor as you type (eglot).
While one shows, `lsp-spark-inline-active-map' is active:
\\{lsp-spark-inline-active-map}"
  :lighter nil
  (lsp-spark--inline-clear)
  (if lsp-spark-inline-mode
      (progn
        (add-to-list 'emulation-mode-map-alists 'lsp-spark--inline-map-alist)
        (add-hook 'pre-command-hook #'lsp-spark--inline-pre-command nil t)
        (add-hook 'post-command-hook #'lsp-spark--inline-post-command nil t))
    (lsp-spark--inline-cancel)
    (remove-hook 'pre-command-hook #'lsp-spark--inline-pre-command t)
    (remove-hook 'post-command-hook #'lsp-spark--inline-post-command t)))

;;;; eglot: next edits

(defface lsp-spark-next-edit-deletion
  '((t :inherit diff-removed :strike-through t))
  "Face of the text the predicted next edit replaces.")

(defface lsp-spark-next-edit
  '((t :inherit diff-added))
  "Face of the text the predicted next edit puts in.")

(defcustom lsp-spark-next-edit-idle-delay 0.05
  "Seconds without typing before asking where the next edit is."
  :type 'number)

(defcustom lsp-spark-next-edit-shown-hook nil
  "Hook run after a next edit from the server is put on screen."
  :type 'hook)

(defvar lsp-spark-next-edit-active-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'lsp-spark-next-edit-apply)
    (define-key map (kbd "<tab>") #'lsp-spark-next-edit-apply)
    (define-key map (kbd "C-g") #'lsp-spark-next-edit-dismiss)
    ;; <escape> is the Escape key of graphical frames; in a terminal ESC
    ;; starts Meta keys, and binding it would take them all.
    (define-key map (kbd "<escape>") #'lsp-spark-next-edit-dismiss)
    map)
  "Keys active while a next edit is shown; every other key works as usual.")

(defconst lsp-spark--next-edit-method :textDocument/copilotInlineEdit)
(defconst lsp-spark--next-edit-shown-method :textDocument/didShowInlineEdit)
(defconst lsp-spark--diagnostics-method :lspSpark/diagnostics)

(defvar-local lsp-spark--next-edit-showing nil
  "Non-nil while a next edit is on screen.
Then `lsp-spark-next-edit-active-map' is active.")

(defvar lsp-spark--next-edit-map-alist
  `((lsp-spark--next-edit-showing . ,lsp-spark-next-edit-active-map))
  "The entry of `emulation-mode-map-alists' that activates the next edit's keys.
It goes after the ghost text's entry, so that while both show TAB
takes the ghost text at the cursor first.")

(defvar-local lsp-spark--next-edit nil
  "The shown edit, as the server sent it (text, range, textDocument, command).")
(defvar-local lsp-spark--next-edit-overlay nil
  "The overlay over the text the shown edit replaces, its new text after it.")
(defvar-local lsp-spark--next-edit-generation 0
  "Counts requests: an answer is used only if no newer request was made.")
(defvar-local lsp-spark--next-edit-pending nil
  "The id of the request in flight, to cancel when a newer one goes out.")
(defvar-local lsp-spark--next-edit-timer nil
  "The idle timer of `lsp-spark-next-edit-idle-delay'.")
(defvar lsp-spark--next-edit-applying nil
  "Non-nil while a next edit is being made: its change asks nothing by itself.")
(defvar-local lsp-spark--diagnostics-timer nil
  "Set while the buffer's diagnostics are about to be sent.")
(defvar-local lsp-spark--sent-diagnostics nil
  "The diagnostics last sent with `lspSpark/diagnostics'.")

;;; Showing

(defun lsp-spark--next-edit-clear ()
  "Take the next edit off the screen and forget it."
  (when lsp-spark--next-edit-overlay
    (delete-overlay lsp-spark--next-edit-overlay))
  (setq lsp-spark--next-edit-overlay nil
        lsp-spark--next-edit nil
        lsp-spark--next-edit-showing nil))

(defun lsp-spark--next-edit-show (server edit)
  "Show EDIT, an edit from SERVER for the buffer as it is now.
The text it replaces is struck through in `lsp-spark-next-edit-deletion';
its new text follows in `lsp-spark-next-edit', every line of it."
  (lsp-spark--next-edit-clear)
  ;; eglot converts the range from the server's position encoding.
  (pcase-let* ((`(,beg . ,end) (eglot--range-region (plist-get edit :range)))
               (overlay (make-overlay beg end nil t nil)))
    (overlay-put overlay 'face 'lsp-spark-next-edit-deletion)
    (overlay-put overlay 'after-string
                 (propertize (plist-get edit :text) 'face 'lsp-spark-next-edit))
    ;; Drawn over the ghost text's and flymake's faces where they meet.
    (overlay-put overlay 'priority 999)
    (setq lsp-spark--next-edit edit
          lsp-spark--next-edit-overlay overlay
          lsp-spark--next-edit-showing t))
  (jsonrpc-notify server lsp-spark--next-edit-shown-method (list :item edit))
  (run-hooks 'lsp-spark-next-edit-shown-hook))

;;; Asking

(defun lsp-spark--next-edit-cancel ()
  "Tell the server the request in flight is no longer wanted; ignore its answer."
  (when-let* ((id lsp-spark--next-edit-pending)
              (server (lsp-spark--inline-server)))
    (jsonrpc-notify server :$/cancelRequest (list :id id)))
  (setq lsp-spark--next-edit-pending nil)
  (cl-incf lsp-spark--next-edit-generation))

(defun lsp-spark--next-edit-request ()
  "Ask lsp-spark for the next edit from point; show the first one it predicts.
The answer is shown only if it is for the document's current version
and no newer request was made since."
  (when-let* ((server (lsp-spark--inline-server)))
    (lsp-spark--next-edit-cancel)
    ;; Send eglot's pending changes first: the request is about the
    ;; version the server then holds.
    (eglot--signal-textDocument/didChange)
    (let ((buffer (current-buffer))
          (generation lsp-spark--next-edit-generation))
      (cl-flet ((current-p ()
                  (and (buffer-live-p buffer)
                       (= generation (buffer-local-value
                                      'lsp-spark--next-edit-generation buffer)))))
        (setq lsp-spark--next-edit-pending
              (car (jsonrpc--async-request-1
                    server lsp-spark--next-edit-method
                    (list :textDocument (eglot--VersionedTextDocumentIdentifier)
                          :position (eglot--pos-to-lsp-position))
                    :deferred lsp-spark--next-edit-method
                    :success-fn
                    (lambda (answer)
                      (when (current-p)
                        (with-current-buffer buffer
                          (setq lsp-spark--next-edit-pending nil)
                          (let ((edit (car (append (plist-get answer :edits) nil))))
                            (when (and edit
                                       (eql (plist-get (plist-get edit :textDocument)
                                                       :version)
                                            eglot--versioned-identifier))
                              (lsp-spark--next-edit-show server edit))))))
                    :error-fn
                    (lambda (&rest _)
                      (when (current-p)
                        (with-current-buffer buffer
                          (setq lsp-spark--next-edit-pending nil))))
                    :timeout-fn #'ignore)))))))

(defun lsp-spark--next-edit-after-change (&rest _)
  "Forget the shown edit, made for an older text; ask again after a pause.
Runs for every change, typed or not (an accepted ghost text, an undo),
except the next edit's own, which asks at once."
  (unless lsp-spark--next-edit-applying
    (lsp-spark--next-edit-clear)
    (when lsp-spark--next-edit-timer
      (cancel-timer lsp-spark--next-edit-timer))
    (setq lsp-spark--next-edit-timer
          (run-with-idle-timer
           lsp-spark-next-edit-idle-delay nil
           (let ((buffer (current-buffer)))
             (lambda ()
               (when (eq buffer (current-buffer))
                 (setq lsp-spark--next-edit-timer nil)
                 (lsp-spark--next-edit-request))))))))

;;; Commands

(defun lsp-spark--next-edit-lines ()
  "The region from the first line of the shown edit to its last."
  (save-excursion
    (cons (progn (goto-char (overlay-start lsp-spark--next-edit-overlay))
                 (line-beginning-position))
          (progn (goto-char (overlay-end lsp-spark--next-edit-overlay))
                 (line-end-position)))))

(defun lsp-spark--next-edit-make (server edit)
  "Make EDIT, from SERVER, in the buffer; tell the server and ask for the next one.
Point goes after the edit's new text."
  (let ((start (overlay-start lsp-spark--next-edit-overlay))
        (text (plist-get edit :text)))
    (lsp-spark--next-edit-clear)
    ;; eglot converts the range from the server's position encoding and
    ;; makes the change one undo step; it refuses an edit for another version.
    (let ((lsp-spark--next-edit-applying t)
          (inhibit-message t))          ; no "applying 1 edits" in the echo area
      (eglot--apply-text-edits
       (vector (list :range (plist-get edit :range) :newText text))
       (plist-get (plist-get edit :textDocument) :version)))
    (goto-char (+ start (length text)))
    (eglot--signal-textDocument/didChange)
    (when-let* ((command (plist-get edit :command)))
      (jsonrpc-async-request server :workspace/executeCommand
                             (list :command (plist-get command :command)
                                   :arguments (or (plist-get command :arguments) []))
                             :success-fn #'ignore :error-fn #'ignore
                             :timeout-fn #'ignore))
    ;; The rest of the same prediction (the next use of a renamed name)
    ;; comes back at once.
    (lsp-spark--next-edit-request)))

(defun lsp-spark-next-edit-apply ()
  "Go to the shown next edit, or make it when point is on its lines.
Going there leaves the mark where point was."
  (interactive)
  (when-let* ((edit lsp-spark--next-edit)
              (server (lsp-spark--inline-server)))
    (pcase-let ((`(,first . ,last) (lsp-spark--next-edit-lines)))
      (if (<= first (point) last)
          (lsp-spark--next-edit-make server edit)
        (push-mark nil t)
        (goto-char (overlay-start lsp-spark--next-edit-overlay))))))

(defun lsp-spark-next-edit-dismiss ()
  "Take the next edit away (and stop the request in flight)."
  (interactive)
  (lsp-spark--next-edit-cancel)
  (lsp-spark--next-edit-clear))

;; Moving to or making a next edit is no typing that asks for ghost text.
(dolist (command '(lsp-spark-next-edit-apply lsp-spark-next-edit-dismiss))
  (put command 'lsp-spark-inline t))

;;; Diagnostics

(defun lsp-spark--lsp-severity (type)
  "The LSP DiagnosticSeverity of the flymake diagnostic TYPE."
  (pcase (or (get type 'flymake-category) type)
    ('flymake-error 1)
    ('flymake-warning 2)
    (_ 3)))

(defun lsp-spark--lsp-diagnostic (diagnostic beg end)
  "Flymake's DIAGNOSTIC, now from BEG to END, as an LSP Diagnostic.
One eglot received from the server keeps its fields as sent; the range
is always where the text it is about is now, in eglot's position
encoding."
  (let* ((data (flymake-diagnostic-data diagnostic))
         (received (and (consp data) (alist-get 'eglot-lsp-diag data)))
         (range (list :start (eglot--pos-to-lsp-position beg)
                      :end (eglot--pos-to-lsp-position end))))
    (if received
        (plist-put (copy-sequence received) :range range)
      (list :range range
            :severity (lsp-spark--lsp-severity (flymake-diagnostic-type diagnostic))
            :source (format "%s" (flymake-diagnostic-backend diagnostic))
            :message (flymake-diagnostic-text diagnostic)))))

(defun lsp-spark--buffer-diagnostics ()
  "Flymake's diagnostics in this buffer as LSP Diagnostics, in buffer order.
Read from flymake's overlays, which follow the text as it is edited."
  (save-restriction
    (widen)
    (let ((overlays (cl-remove-if-not
                     (lambda (overlay) (overlay-get overlay 'flymake-diagnostic))
                     (overlays-in (point-min) (point-max)))))
      (mapcar (lambda (overlay)
                (lsp-spark--lsp-diagnostic (overlay-get overlay 'flymake-diagnostic)
                                           (overlay-start overlay) (overlay-end overlay)))
              (sort overlays (lambda (one other)
                               (< (overlay-start one) (overlay-start other))))))))

(defun lsp-spark--send-diagnostics ()
  "Send the buffer's diagnostics with `lspSpark/diagnostics' if they changed."
  (when-let* ((server (lsp-spark--inline-server)))
    (let ((diagnostics (lsp-spark--buffer-diagnostics)))
      (unless (equal diagnostics lsp-spark--sent-diagnostics)
        (setq lsp-spark--sent-diagnostics diagnostics)
        ;; The ranges are in the text as it is now: the server gets it first.
        (eglot--signal-textDocument/didChange)
        (jsonrpc-notify server lsp-spark--diagnostics-method
                        (list :uri (plist-get (eglot--TextDocumentIdentifier) :uri)
                              :diagnostics (vconcat diagnostics)))))))

(defun lsp-spark--diagnostics-reported (&rest _)
  "Send the buffer's diagnostics once flymake has taken its backends' reports.
Runs after every report flymake handles (flymake has no hook for it);
the reports of one moment are sent together."
  (when (and lsp-spark-next-edit-mode (not lsp-spark--diagnostics-timer))
    (setq lsp-spark--diagnostics-timer
          (run-at-time
           0 nil
           (let ((buffer (current-buffer)))
             (lambda ()
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   (setq lsp-spark--diagnostics-timer nil)
                   (lsp-spark--send-diagnostics)))))))))

;;;###autoload
(define-minor-mode lsp-spark-next-edit-mode
  "Show the edit lsp-spark predicts you make next, wherever it is (eglot).
After each change the server is asked for `textDocument/copilotInlineEdit';
the text the edit replaces is struck through and its new text shown
after it.  While one shows, `lsp-spark-next-edit-active-map' is active:
\\{lsp-spark-next-edit-active-map}
Ghost text at the cursor (`lsp-spark-inline-mode') takes its keys
first.  Flymake's diagnostics go to the server as they change
\(`lspSpark/diagnostics'), so that predictions can fix them."
  :lighter nil
  (lsp-spark--next-edit-clear)
  (when lsp-spark--next-edit-timer
    (cancel-timer lsp-spark--next-edit-timer)
    (setq lsp-spark--next-edit-timer nil))
  (if lsp-spark-next-edit-mode
      (progn
        ;; The faces inherit diff-mode's.
        (require 'diff-mode)
        (add-to-list 'emulation-mode-map-alists 'lsp-spark--next-edit-map-alist t)
        (add-hook 'after-change-functions #'lsp-spark--next-edit-after-change nil t)
        (advice-add 'flymake--handle-report :after #'lsp-spark--diagnostics-reported))
    (lsp-spark--next-edit-cancel)
    (setq lsp-spark--sent-diagnostics nil)
    (remove-hook 'after-change-functions #'lsp-spark--next-edit-after-change t)))

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

/**
 * The K-file: its labels and argument types (labels.ts), the names it may carry (names.ts), its
 * text form read (parse.ts) and written (format.ts), and the K-folder's tree as text (tree.ts).
 */
export { formatFolderRef, formatKFile, formatUpdate } from "./format.js";
export {
  type ArgLabel,
  CLARIFY_ACTIONS,
  type ClarifyAction,
  type EditMode,
  type FolderRef,
  folderRef,
  type KFile,
  LABEL_MEANINGS,
  RESPONSE_ACTIONS,
  type ResponseAction,
  ROOT_NAME,
  UPDATE_ACTIONS,
  UPDATE_SYNTAX,
  type UpdateAction,
  type UpdateArgs,
  type UpdateLabel,
  type UpdateOf,
} from "./labels.js";
export {
  MAX_DESCRIPTION,
  MAX_FILE_NAME,
  MAX_FOLDER_NAME,
  validateDescription,
  validateFileName,
  validateFolderName,
} from "./names.js";
export { parseKFile, parseUpdate } from "./parse.js";
export { renderTree, type TreeFolder } from "./tree.js";
